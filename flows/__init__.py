"""Prefect flows: orchestration only (no chess or learning logic here)."""
