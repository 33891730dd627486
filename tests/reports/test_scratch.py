import json, shutil
from conftest import run_lab

def test_scratch(pytester):
    result, rd = run_lab(pytester, "-rA")
    print(result.stdout.str())
    print(result.stderr.str())
    shutil.rmtree("/tmp/scratch-results", ignore_errors=True)
    shutil.copytree(rd, "/tmp/scratch-results")
