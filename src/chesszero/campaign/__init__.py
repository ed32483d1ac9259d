"""Campaigns: the generation state machine (``runner``), its stages, durable
state, MLflow tracking and progress; ``dispatch`` is the one phase loop,
``flow`` runs it as the Prefect flow ``final-recipe`` (``flows/`` only points
Prefect deployments at it).

    chesszero campaign run --preset smoke      # Prefect flow, in-process
    chesszero campaign status --preset smoke
"""
