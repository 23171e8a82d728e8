"""First contentful paint of dashboard pages, read from the DevTools protocol.

    python3 paint.py BASE_URL LOADS PATH...

Loads each page LOADS times in headless Chromium (a fresh navigation each time, the cache
disabled through the protocol) and takes the time from the page's lifecycle event `init` to its
`firstContentfulPaint`, both as Chromium's DevTools protocol reports them (`Page.lifecycleEvent`,
read from chromedriver's performance log). Prints one line per page: p50 and p99 in ms.
Used by `healthgate-bench views` (Sources/healthgate-bench/ViewsBench.swift); not a test.
"""

import json
import statistics
import sys

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--lang=en-US",
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    driver.set_window_size(1280, 900)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    driver.execute_cdp_cmd("Page.enable", {})
    driver.execute_cdp_cmd("Page.setLifecycleEventsEnabled", {"enabled": True})
    return driver


def paint(driver, url):
    """Milliseconds from the navigation's `init` to its `firstContentfulPaint`."""
    driver.get_log("performance")  # drop what earlier loads left
    driver.get("about:blank")
    driver.get(url)
    events = {}
    for _ in range(50):
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Page.lifecycleEvent":
                params = message["params"]
                events.setdefault((params["loaderId"], params["name"]), params["timestamp"])
        loaders = [loader for (loader, name) in events if name == "firstContentfulPaint" and (loader, "init") in events]
        if loaders:
            loader = loaders[-1]
            return (events[(loader, "firstContentfulPaint")] - events[(loader, "init")]) * 1000
        driver.execute_async_script("setTimeout(arguments[arguments.length - 1], 100)")
    raise SystemExit(f"{url}: no firstContentfulPaint lifecycle event within 5 s")


def main():
    base, loads, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    driver = browser()
    try:
        for path in paths:
            times = sorted(paint(driver, base + path) for _ in range(loads))
            p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
            print(f"  {path[:32]:<32} {statistics.median(times):7.1f} ms {p99:7.1f} ms")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
