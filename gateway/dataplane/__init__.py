"""What `/v1` and `/v2` share on the query path: the route table and the lane that serves it ahead of
FastAPI, the validation of a query into its envelope, and handing it to the scheduler."""
