"""The browser UI: plain ES modules shipped as package data (no Python code here)."""
