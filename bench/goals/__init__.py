"""The performance goals of the architecture (§9), measured: `peers` (ratios against the servers a user
would pick instead), `selection` (`get_variant` decision time), `ilp` (the exact autoscaling ILP)."""
