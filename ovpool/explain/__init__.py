"""``ovpool explain``: where a spec comes from (``sources``) and how it covers an input (``explanation``)."""
