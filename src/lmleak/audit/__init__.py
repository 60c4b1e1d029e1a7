"""The whole audit from one config file: stages, run directory, headline metrics, the CI gate."""
