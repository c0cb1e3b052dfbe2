"""Benchmarks behind `ep-mcp bench …`: index builds, serving load, hub ranking, query latency.

Every path (packs, golden sets, work folders) comes in as an argument from the CLI.
"""
