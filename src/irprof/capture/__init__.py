"""Capture adapters: run a user's script under its framework's profiler and write a run bundle.

Framework modules are imported only by the `*_runner` modules, which run in a child process.
"""
