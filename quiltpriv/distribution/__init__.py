"""Distribution privacy: the mechanisms of [CO23] (Wasserstein, Gaussian, property models) and
local distribution privacy with tupling [KM19].
"""
