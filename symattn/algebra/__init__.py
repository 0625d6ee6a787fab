"""Exact arithmetic domains, truncated power series, jets and valuations."""
