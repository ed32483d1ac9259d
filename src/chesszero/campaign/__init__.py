"""Campaigns: the generation state machine (``runner``), its stages, durable
state, MLflow tracking and progress. Prefect flows in ``flows/`` call these.

    python -m chesszero.campaign run --preset smoke      # Prefect flow, in-process
    python -m chesszero.campaign status --preset smoke
"""
