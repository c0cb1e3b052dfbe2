"""The HTTP app: routes, middleware, the rate limit, /search and its contract."""
