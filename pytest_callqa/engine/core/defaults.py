"""Every default the engine and the plugin share, in one place: the plugin's option help,
the settings and the engine's constructors all read these (standard library only, so the
plugin can import it at start-up)."""

DEFAULT_JUDGE_MODEL = "gpt-4o-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Requests in flight at once, for all xdist workers of a run together.
DEFAULT_CONCURRENCY = 16
# Seconds one judge request may take before it is retried.
DEFAULT_TIMEOUT_S = 60.0
# Generation replies are longer than verdicts.
DEFAULT_GENERATION_TIMEOUT_S = 120.0
DEFAULT_CACHE_DIR = ".callqa_cache"
# How judge and generation replies are constrained; ``auto`` steps down per endpoint.
RESPONSE_FORMATS = ("auto", "json_schema", "json_object_schema", "json_object", "none")
DEFAULT_RESPONSE_FORMAT = "auto"
# Calibration (--callqa-calibrate): the kappa a judge must reach on every metric it scores
# (0.6, the level published judge studies call substantial agreement), and the model whose
# recorded outputs the human_labels describe.
DEFAULT_MIN_KAPPA = 0.6
DEFAULT_CALIBRATION_MODEL = "human"
# The local judge's llama.cpp server: its context window (prompt and reply together) and the
# requests it is sent at once.
DEFAULT_LOCAL_CTX = 8192
DEFAULT_LOCAL_PARALLEL = 1
