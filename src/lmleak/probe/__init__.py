"""ProPILE (paper 003): probing language models for a data subject's linked PII.

Black-box probing (templates, generation, exact match, likelihood Eq. 2/4, null baseline, γ<k) and
white-box probing (soft prompts, §3.3.2 / appendix A.4).
"""
