"""The command-line interface."""
def main():
    raise SystemExit(0)
