"""Training: plain, DP-SGD, CRT and selective-DP modes, accounting, confidentiality bounds,
and the pre-processing of paper 002 (dedup, redaction, public/private split)."""
