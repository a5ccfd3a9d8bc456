"""Command-line interface: thin wrappers that parse arguments, call the library and print."""
