"""The settings: the model, its schema and checks, the environment, loading."""
