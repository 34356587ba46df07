"""The fleet side of configbags: commands that read many live servers (`configbags fleet
check`) and plan changes between two configs (`configbags rollout`)."""
