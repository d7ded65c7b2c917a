from hypothesis import strategies as st
from pubsift.core.conformance import ModelConformance


class TestRangeModel(ModelConformance):
    model_name = "toy-ranges"
    filters = st.builds(lambda lo, n: (lo, lo + n), st.integers(-3, 3), st.integers(0, 3))
    events = st.integers(-4, 7)
