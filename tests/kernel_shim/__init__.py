"""Runs the CUDA C sources of plugins/ on the CPU (tests only): see host.py."""
