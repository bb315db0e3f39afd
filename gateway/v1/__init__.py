"""The `/v1` REST routes: apps, models, workers and hardware, queries (as documented), events, jobs."""
