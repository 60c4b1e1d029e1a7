"""End-to-end reproductions of the papers' experiments (each a thin driver over the library)."""
