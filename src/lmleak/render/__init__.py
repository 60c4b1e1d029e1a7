"""Presentation: reads result files, writes HTML / plots / terminal tables; never computes a metric."""
