"""Deployment on scrapyd: a small scrapyd HTTP client and the recurring scheduler scrapyd lacks."""
