"""Offline assets (fetched from package registries) and dataset loaders."""
