from .._check import *  # noqa: F401,F403  (moved to widgets/_check.py; models keep importing it from here)
