"""Evidence and sign-off: Allure results, plots, the sign-off report.

A lab run (pytest with the labtest plugins) leaves one *results directory*:

- Allure result files (``*-result.json``, ``*-attachment.*``) from allure-pytest;
- ``environment.properties`` and ``categories.json`` for Allure;
- ``labtest-results.json``: every test with its outcome, plan IDs and
  measurements, plus the testbed, limits profile, device inventory and who ran
  it, so the sign-off report never has to reverse-engineer Allure's files.

``labtest report RESULTS_DIR`` turns that directory into a sign-off bundle
(see :mod:`labtest.reports.signoff`).
"""

RESULTS_FILE = "labtest-results.json"
ENVIRONMENT_FILE = "environment.properties"
CATEGORIES_FILE = "categories.json"
