"""Analyses over profiled IR and traces; each returns plain data, never text or markup."""
