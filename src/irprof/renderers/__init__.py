"""Renderers: plain analysis data in, text or bytes out; each declares its file extension."""
