"""The `final-recipe` Prefect flow, for Prefect's `serve`/`deploy` to point at.

The flow lives in the package (``chesszero.campaign.flow``); this file only
names it where Prefect deployments look for it::

    prefect deployment run final-recipe/cpu          # with a server + `python flows/serve.py`
    make run                                          # same flow, in-process (ephemeral API)
"""

from chesszero.campaign.flow import final_recipe

__all__ = ["final_recipe"]
