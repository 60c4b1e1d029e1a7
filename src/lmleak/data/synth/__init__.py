"""Synthetic corpora with known PII: customer-service dialogues (CustomerSim) and clinical notes."""
