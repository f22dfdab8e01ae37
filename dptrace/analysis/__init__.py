"""Analyses: pure functions from dptrace tables to summary DataFrames. Nothing here prints."""
