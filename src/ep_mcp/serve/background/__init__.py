"""What runs beside a server: the watcher, backfill and artifact swaps."""
