"""What is served: the packs' runtimes, opening them, indexing and publishing."""
