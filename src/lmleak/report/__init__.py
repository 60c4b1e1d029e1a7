"""The training data leakage report (paper 001): S, features, metrics and studies, from the ledger."""
