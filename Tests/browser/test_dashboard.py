"""The dashboard in a real browser: Debian's Chromium driven by Selenium (chromedriver from
Debian too), against `healthgate dashboard` on a database filled through the CLI as a person
would (`define`, `log`), in Berlin's time zone with a 04:00 day start.

Every value shown is checked against the database (read here with sqlite3 and zoneinfo, by the
one day rule of docs/days.md), every page has no WCAG 2 A/AA violation by axe-core, and
screenshots of every page at desktop and phone sizes are written to $HEALTHGATE_BROWSER_RESULTS
(default .build/browser-results, beside the guest tests' .build/vm-results). The first contentful
paint of each page is printed, not asserted (a measurement, not a test).
"""
import json
import os
import pathlib
import re
import sqlite3
import subprocess
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import axe_core_python
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEALTHGATE = os.environ.get("HEALTHGATE", str(ROOT / ".build/debug/healthgate"))
OUTPUT = pathlib.Path(os.environ.get("HEALTHGATE_BROWSER_RESULTS", ROOT / ".build/browser-results"))
ZONE = ZoneInfo("Europe/Berlin")
ENV = dict(os.environ, TZ="Europe/Berlin")
AT = "2026-04-02T21:00"
END = date(2026, 4, 2)
DAY_START_MIN = 4 * 60
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}


def healthgate(db, *arguments):
    result = subprocess.run([HEALTHGATE, *arguments, "--db", db], env=ENV, capture_output=True, text=True)
    assert result.returncode == 0, f"{arguments}: {result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("dashboard") / "healthgate.sqlite")
    healthgate(db, "define", "day-start", "04:00")
    healthgate(db, "define", "goal", "water", "2l")
    healthgate(db, "define", "habit", "stretch", "--kind", "yes-no")
    healthgate(db, "define", "habit", "<b>reading</b>", "--kind", "numeric", "--unit", "pages", "--target", "20")
    # Three weeks of water, with days left out (gaps) and drinks before the 04:00 day start.
    for back in range(21):
        day = END - timedelta(days=back)
        if back % 5 == 3:
            continue
        for hour, volume in [(8, "500ml"), (13, "750ml"), (19, "330ml")][: 1 + back % 3]:
            healthgate(db, "log", "water", volume, "--at", f"{day.isoformat()}T{hour:02d}:00")
        if back % 4 == 1:
            healthgate(db, "log", "water", "250ml", "--at", f"{day.isoformat()}T02:30")
        healthgate(db, "log", "habit", "stretch", "--done", "--at", f"{day.isoformat()}T07:00")
    healthgate(db, "log", "vape", "--trigger", "stress", "--thoughts", "<i>after the call</i>", "--at", f"{END.isoformat()}T11:15")
    healthgate(db, "log", "meal", "pasta", "--kcal", "650", "--at", f"{END.isoformat()}T12:30")
    healthgate(db, "log", "habit", "<b>reading</b>", "12", "--at", f"{END.isoformat()}T20:00")
    healthgate(db, "log", "sleep", "--from", "23:10", "--to", "06:40", "--at", END.isoformat())
    # Nights, weighings and workouts of the last weeks, and a ride from a FIT file of 2020.
    for back in range(1, 20):
        day = END - timedelta(days=back)
        if back % 6 != 2:
            healthgate(db, "log", "sleep", "--from", f"23:{back * 2:02d}", "--to", f"0{5 + back % 3}:30", "--at", day.isoformat())
        if back % 3 == 0:
            healthgate(db, "log", "weight", f"{80 - back * 0.1:.1f}kg", "--at", f"{day.isoformat()}T07:30")
        if back % 4 == 1:
            healthgate(db, "log", "workout", "running" if back % 8 == 1 else "cycling", "--duration", f"{30 + back}m",
                       "--distance", f"{5 + back % 5}km", "--at", f"{day.isoformat()}T18:00")
    healthgate(db, "import", str(ROOT / "Fixtures/fit/garmin-edge530-cycling-hrv-power.fit"))
    return db


@pytest.fixture(scope="module")
def dashboard(database):
    process = subprocess.Popen([HEALTHGATE, "dashboard", "--db", database, "--listen", "127.0.0.1:0", "--at", AT],
                               env=ENV, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    assert match, f"unexpected first line: {line!r}"
    yield match.group(1).rstrip("/")
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--lang=en-US"]:
        options.add_argument(argument)
    # No network beyond loopback: a page that asked for anything else would fail to load it.
    options.add_argument("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


def day_of(instant):
    """The local day of an instant, by docs/days.md: the date of its local time, the day before
    when that is before the day start (no DST change falls between 00:00 and 04:00 here)."""
    local = instant.astimezone(ZONE)
    if local.hour * 60 + local.minute < DAY_START_MIN:
        return local.date() - timedelta(days=1)
    return local.date()


def water_by_day(db):
    totals = {}
    rows = sqlite3.connect(db).execute("SELECT time, value FROM habit_events WHERE habit = 'hydration' AND deleted = 0")
    for time, value in rows:
        day = day_of(datetime.fromisoformat(time.replace("Z", "+00:00")))
        totals[day] = totals.get(day, 0) + value
    return totals


def number(value):
    return str(int(value)) if value == int(value) else f"{value:g}"


def look(browser, url, name):
    """Loads the page, checks it with axe-core, takes its screenshots, prints its first paint."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    for size, (width, height) in SIZES.items():
        browser.set_window_size(width, height)
        browser.get(url)
        # The paint entry is reported once the browser has painted: waited for (at most 5 s).
        paint = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "new PerformanceObserver((list, observer) => {"
            "  const entry = list.getEntriesByName('first-contentful-paint')[0];"
            "  if (entry) { observer.disconnect(); done(entry.startTime); }"
            "}).observe({type: 'paint', buffered: true});"
            "setTimeout(() => done(null), 5000);")
        print(f"{name} {size}: first contentful paint {paint:.0f} ms" if paint is not None else f"{name} {size}: no paint entry")
        browser.save_screenshot(str(OUTPUT / f"{name}-{size}.png"))
        # Nothing wider than the window at phone width.
        overflow = browser.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        wide = browser.execute_script(
            "const w = document.documentElement.clientWidth;"
            "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w + 0.5)"
            ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));")
        assert overflow <= 0, f"{name} at {size} width is {overflow} px wider than the window: {wide}"
    # axe-core checks contrast at points of the viewport: a window tall enough for the whole page
    # (at phone width, an element below the fold was measured against the header's colour).
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(SIZES["desktop"][0], max(SIZES["desktop"][1], height + 200))
    axe = pathlib.Path(axe_core_python.__file__).with_name("axe.min.js").read_text()
    browser.execute_script(axe)
    result = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}}).then(done);")
    violations = [(v["id"], v["help"], [(n["target"], n.get("failureSummary")) for n in v["nodes"]][:3]) for v in result["violations"]]
    assert violations == [], f"{name}: {violations}"


def test_today_shows_what_the_database_holds(database, dashboard, browser):
    look(browser, dashboard + "/", "today")
    today = json.loads(healthgate(database, "today", "--json", "--at", AT))
    fields = {e.get_attribute("data-field"): e for e in browser.find_elements(By.CSS_SELECTOR, "[data-field]")}
    water = water_by_day(database).get(END, 0)
    assert today["water"]["ml"] == water
    assert fields["water-ml"].get_attribute("data-value") == number(water)
    assert fields["water-ml"].text == f"{number(water)} ml"
    assert fields["vaping-sessions"].text == "1 session"
    assert fields["eaten-kcal"].text == "650 kcal eaten"
    assert fields["asleep-s"].text == "7h 30m asleep"
    # The habits' table, with the HTML in a name shown as text.
    names = [e.get_attribute("data-habit") for e in browser.find_elements(By.CSS_SELECTOR, "tr[data-habit]")]
    assert "<b>reading</b>" in names and "stretch" in names
    assert browser.find_elements(By.CSS_SELECTOR, "td b") == []
    assert "<b>reading</b>" in browser.find_element(By.TAG_NAME, "table").text


def test_water_bars_and_table_equal_the_database(database, dashboard, browser):
    look(browser, dashboard + "/water?days=30", "water")
    totals = water_by_day(database)
    days = [END - timedelta(days=back) for back in range(29, -1, -1)]
    rects = browser.find_elements(By.CSS_SELECTOR, "svg#water rect[data-day]")
    assert [r.get_attribute("data-day") for r in rects] == [d.isoformat() for d in days]
    for rect, day in zip(rects, days):
        if day in totals:
            assert rect.get_attribute("class") in ("bar", "bar met") and rect.get_attribute("data-value") == number(totals[day]), day
            assert (rect.get_attribute("class") == "bar met") == (totals[day] >= 2000), day
        else:
            assert rect.get_attribute("class") == "gap", day
    # The days before the first entry and the left-out ones are gaps, drawn.
    assert sum(1 for r in rects if r.get_attribute("class") == "gap") == sum(1 for d in days if d not in totals) > 0
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr[data-day]")
    table = {r.get_attribute("data-day"): r.find_elements(By.TAG_NAME, "td")[1].get_attribute("textContent") for r in rows}
    assert table == {d.isoformat(): number(totals[d]) if d in totals else "no data" for d in days}
    assert browser.find_element(By.CSS_SELECTOR, "svg#water title").get_attribute("textContent") == "Water per day, last 30 days"


def test_other_ranges_and_the_csv(database, dashboard, browser):
    look(browser, dashboard + "/water?days=7", "water-7")
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#water rect[data-day]")) == 7
    browser.get(dashboard + "/water?days=12")
    assert "days must be one of 7, 30, 90, 365" in browser.find_element(By.TAG_NAME, "body").text


def navigate(browser, element):
    """Clicks a link or a form's button and waits until the page it leads to has replaced this
    one: a selector found before then may be the old page's (its status line, its rows), which
    goes stale under the test (seen in CI: the delete's answer read through the edit's status)."""
    page = browser.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(browser, 60).until(expected_conditions.staleness_of(page))


def shown(browser, selector):
    """The element once the page the browser went to shows it (a form's answer loads after the click)."""
    try:
        return WebDriverWait(browser, 60).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, selector)))
    except Exception:
        raise AssertionError(f"{selector} not shown at {browser.current_url}: {browser.find_element(By.TAG_NAME, 'body').text[:500]}")


def hydration_rows(db):
    return sqlite3.connect(db).execute("SELECT count(*), total(value) FROM habit_events WHERE habit = 'hydration' AND deleted = 0").fetchone()


def test_the_timer_ticks(database, dashboard, browser):
    browser.get(dashboard + "/")
    timer = browser.find_element(By.CSS_SELECTOR, "[data-tick]")
    first = timer.text
    assert re.fullmatch(r"(\d+d \d+h |\d+h )?\d\dm \d\ds ago", first), first
    # Within three seconds the text has changed (it counts every second).
    for _ in range(30):
        browser.implicitly_wait(0)
        if timer.text != first:
            break
        browser.execute_async_script("setTimeout(arguments[arguments.length - 1], 100)")
    assert timer.text != first


def test_the_box_card_follows_live(database, dashboard, browser):
    """The box's card follows the database through server-sent events: a drink logged elsewhere
    (years before the days the other tests look at) lengthens the outbox shown, without a reload."""
    browser.get(dashboard + "/")
    outbox = lambda: int(browser.find_element(By.CSS_SELECTOR, "#live-status [data-field=outbox]").get_attribute("data-value"))
    (before,) = WebDriverWait(browser, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda _: (outbox(),))
    marker = browser.find_element(By.CSS_SELECTOR, "h1")
    healthgate(database, "log", "water", "100ml", "--at", "2020-01-01T12:00")
    queued = sqlite3.connect(database).execute("SELECT count(*) FROM outbox").fetchone()[0]
    assert queued == before + 1
    # The card is replaced by each event: an element read as it goes is looked up again.
    WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(lambda _: outbox() == queued)
    # The same page, not a new one: an element found before is still attached.
    assert marker.is_displayed()


def test_logging_from_the_page(database, dashboard, browser):
    browser.set_window_size(*SIZES["phone"])
    browser.get(dashboard + "/")
    count, total = hydration_rows(database)
    # A glass in one tap: the page comes back saying so, with the new total; the database has it.
    navigate(browser, browser.find_element(By.XPATH, "//form[input[@name='kind' and @value='glass']]//button"))
    notice = shown(browser, "[role=status]")
    assert notice.text.startswith("Logged ")
    assert hydration_rows(database)[0] == count + 1
    new_total = hydration_rows(database)[1]
    today = day_of(datetime.fromisoformat(AT).replace(tzinfo=ZONE))
    assert browser.find_element(By.CSS_SELECTOR, "[data-field=water-ml]").get_attribute("data-value") == number(water_by_day(database)[today])
    assert new_total - total == pytest.approx(236.6, abs=0.05)  # 8 fl oz, stored to 0.1 ml
    look(browser, browser.current_url, "today-logged")
    # Water at a future time: refused with the reason shown, nothing stored.
    browser.find_element(By.TAG_NAME, "summary").click()
    browser.find_element(By.ID, "water-value").send_keys("330ml")
    browser.execute_script("document.getElementById('water-at').value = '2026-04-03T08:00'")
    navigate(browser, browser.find_element(By.XPATH, "//form[input[@name='kind' and @value='water']]//button"))
    alert = shown(browser, "[role=alert]")
    assert alert.text == "Nothing was stored: 2026-04-03 08:00 is in the future"
    assert hydration_rows(database)[0] == count + 1
    # A vaping session with its trigger and thoughts (HTML in them stays text).
    browser.find_element(By.TAG_NAME, "summary").click()
    browser.find_element(By.CSS_SELECTOR, "#vape-trigger option[value='boredom']").click()
    browser.find_element(By.ID, "vape-thoughts").send_keys("<b>bored</b>")
    navigate(browser, browser.find_element(By.XPATH, "//form[input[@name='kind' and @value='vape']]//button"))
    assert shown(browser, "[role=status]").text.startswith("Logged ")
    stored = sqlite3.connect(database).execute(
        "SELECT category, note FROM habit_events WHERE habit = 'vaping' ORDER BY time DESC LIMIT 1").fetchone()
    assert stored == ("boredom", "<b>bored</b>")
    assert browser.find_element(By.CSS_SELECTOR, "[data-field=vaping-sessions]").get_attribute("data-value") == "2"


def test_vaping_page(database, dashboard, browser):
    look(browser, dashboard + "/vaping?days=30", "vaping")
    rows = sqlite3.connect(database).execute("SELECT time FROM habit_events WHERE habit = 'vaping' AND deleted = 0").fetchall()
    first_day = END - timedelta(days=29)
    in_range = [t for (t,) in rows if first_day <= day_of(datetime.fromisoformat(t.replace("Z", "+00:00"))) <= END]
    shown = browser.find_element(By.CSS_SELECTOR, "[data-field=sessions]")
    assert shown.get_attribute("data-value") == str(len(in_range)) and len(in_range) >= 1
    bars = browser.find_elements(By.CSS_SELECTOR, "svg#vaping rect[data-day]")
    assert len(bars) == 30
    assert sum(float(b.get_attribute("data-value") or 0) for b in bars) == len(in_range)
    hours = browser.find_elements(By.CSS_SELECTOR, "svg#vaping-hours rect[data-day]")
    assert len(hours) == 24 and sum(float(b.get_attribute("data-value")) for b in hours) == len(in_range)


def test_habit_pages(database, dashboard, browser):
    look(browser, dashboard + "/habits", "habits")
    names = [e.get_attribute("data-habit") for e in browser.find_elements(By.CSS_SELECTOR, "tr[data-habit]")]
    assert names == ["<b>reading</b>", "stretch"]
    navigate(browser, browser.find_element(By.LINK_TEXT, "stretch"))
    shown(browser, "svg#calendar")
    look(browser, browser.current_url, "habit")
    done = set()
    for (t,) in sqlite3.connect(database).execute("SELECT time FROM habit_events WHERE habit = 'stretch' AND deleted = 0"):
        done.add(day_of(datetime.fromisoformat(t.replace("Z", "+00:00"))).isoformat())
    met = {r.get_attribute("data-day") for r in browser.find_elements(By.CSS_SELECTOR, "svg#calendar rect.met")}
    assert met == done and len(done) >= 10
    today = json.loads(healthgate(database, "today", "--json", "--at", AT))
    streak = next(h for h in today["habits"] if h["name"] == "stretch")["current_streak"]
    assert browser.find_element(By.CSS_SELECTOR, "[data-field=current-streak]").get_attribute("data-value") == str(streak)


def test_workout_pages_and_the_crosshair(database, dashboard, browser):
    look(browser, dashboard + "/workouts?days=30", "workouts")
    first = datetime.combine(END - timedelta(days=29), datetime.min.time(), ZONE) + timedelta(minutes=DAY_START_MIN)
    db = sqlite3.connect(database)
    ids = [i for i, t in db.execute("SELECT id, start_time FROM workouts WHERE deleted = 0")
           if datetime.fromisoformat(t.replace("Z", "+00:00")) >= first]
    rows = browser.find_elements(By.CSS_SELECTOR, "tr[data-workout]")
    assert sorted(r.get_attribute("data-workout") for r in rows) == sorted(ids) and len(ids) >= 4
    # Filtered by sport with the form (no script needed).
    browser.find_element(By.CSS_SELECTOR, "#sport option[value='running']").click()
    navigate(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
    shown(browser, "tr[data-workout]")
    running = db.execute("SELECT count(*) FROM workouts WHERE sport = 'running' AND start_time >= ?",
                         (first.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%SZ"),)).fetchone()[0]
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr[data-workout]")) == running >= 1
    # The ride from the file: every metric on one time axis, and one crosshair across them all.
    (ride,) = db.execute("SELECT id FROM workouts WHERE start_time LIKE '2020-%'").fetchone()
    look(browser, f"{dashboard}/workout?id={ride}", "workout")
    figures = browser.find_elements(By.CSS_SELECTOR, "figure[data-series]")
    assert [f.get_attribute("data-series") for f in figures] == ["heart_rate", "speed", "power", "cadence", "altitude"]
    assert browser.find_elements(By.CSS_SELECTOR, "svg#route polyline")
    chart = browser.find_element(By.CSS_SELECTOR, "svg#chart-heart_rate")
    browser.execute_script("arguments[0].scrollIntoView()", chart)
    box = chart.rect
    # Pointing at the middle of one chart moves the line in every chart to the same place.
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser).move_to_element_with_offset(chart, int(box["width"] * 0.2), 0).perform()
    positions = {c.get_attribute("x1") for c in browser.find_elements(By.CSS_SELECTOR, "svg.series-chart line.cursor")}
    assert len(positions) == 1 and float(positions.pop()) > 56
    readouts = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "figure[data-series] .readout")]
    assert all(re.fullmatch(r"-?[0-9.]+ \S+", r) for r in readouts), readouts
    low, high = float(figures[0].get_attribute("data-low")), float(figures[0].get_attribute("data-high"))
    assert low - 1 <= float(readouts[0].split()[0]) <= high + 1


def test_sleep_body_and_stats_pages(database, dashboard, browser):
    look(browser, dashboard + "/sleep?nights=30", "sleep")
    db = sqlite3.connect(database)
    nights = {}
    for start, end in db.execute("SELECT start_time, end_time FROM sleep_sessions WHERE deleted = 0"):
        day = day_of(datetime.fromisoformat(end.replace("Z", "+00:00")))
        if END - timedelta(days=29) <= day <= END:
            nights[day.isoformat()] = nights.get(day.isoformat(), 0) + 1
    stacks = browser.find_elements(By.CSS_SELECTOR, "svg#sleep g.stack")
    assert sorted(g.get_attribute("data-day") for g in stacks) == sorted(nights) and len(nights) >= 10
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#sleep rect.gap")) == 30 - len(nights)
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#sleep-times rect.bar")) == len(nights)
    look(browser, dashboard + "/body?days=30", "body")
    weights = db.execute("SELECT count(*) FROM measurements WHERE kind = 'weight' AND deleted = 0").fetchone()[0]
    assert browser.find_element(By.CSS_SELECTOR, "figure[data-kind=weight]").get_attribute("data-readings") == str(weights)
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#weight g.raw circle")) == weights
    look(browser, dashboard + "/stats?period=week", "stats")
    stats = json.loads(healthgate(database, "stats", "--json", "--period", "week", "--at", AT))
    rows = {r.get_attribute("data-period"): r for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-active-s]")}
    for period in stats["periods"]:
        if period["period"] in rows:
            assert rows[period["period"]].get_attribute("data-workouts") == str(period["workouts"])
    assert len(rows) >= 3


def test_changing_and_deleting_an_entry(database, dashboard, browser):
    browser.set_window_size(*SIZES["phone"])
    browser.get(dashboard + "/")
    navigate(browser, browser.find_element(By.LINK_TEXT, "Change or delete today's entries"))
    shown(browser, "tr[data-entry]")
    look(browser, browser.current_url, "entries")
    db = sqlite3.connect(database)
    # The 08:00 water of the day: changed to 400 ml with a note, through its row's form.
    row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-entry]")
               if r.find_elements(By.TAG_NAME, "td")[1].text == "water")
    record = row.get_attribute("data-entry")
    row.find_element(By.TAG_NAME, "summary").click()
    row.find_element(By.CSS_SELECTOR, "input[name=value]").send_keys("400ml")
    note = row.find_element(By.CSS_SELECTOR, "input[name=note]")
    note.clear()
    note.send_keys("with lemon")
    navigate(browser, row.find_element(By.XPATH, ".//form[@action='/edit']//button"))
    assert shown(browser, "[role=status]").text.startswith("Changed water of 08:00: version 2")
    assert db.execute("SELECT value, note, version FROM habit_events WHERE id = ?", (record,)).fetchone() == (400.0, "with lemon", 2)
    # Deleted: a tombstone; the row leaves the page.
    row = browser.find_element(By.CSS_SELECTOR, f"tr[data-entry='{record}']")
    navigate(browser, row.find_element(By.XPATH, ".//form[@action='/delete']//button"))
    assert shown(browser, "[role=status]").text.startswith("Deleted water of 08:00 (version 3 is its tombstone)")
    assert db.execute("SELECT deleted, version FROM habit_events WHERE id = ?", (record,)).fetchone() == (1, 3)
    assert browser.find_elements(By.CSS_SELECTOR, f"tr[data-entry='{record}']") == []


def test_timeline(database, dashboard, browser):
    look(browser, dashboard + "/timeline?days=7", "timeline")
    lanes = {g.get_attribute("data-lane"): int(g.get_attribute("data-count"))
             for g in browser.find_elements(By.CSS_SELECTOR, f"svg#timeline-{END.isoformat()} g.lane")}
    assert list(lanes) == ["sleep", "workouts", "water", "vaping", "meals", "habits"]
    start = datetime.combine(END, datetime.min.time(), ZONE) + timedelta(minutes=DAY_START_MIN)
    events = [(h, datetime.fromisoformat(t.replace("Z", "+00:00"))) for h, t in
              sqlite3.connect(database).execute("SELECT habit, time FROM habit_events WHERE deleted = 0")]
    today = [h for h, t in events if start <= t < start + timedelta(days=1)]
    assert lanes["water"] == today.count("hydration") and lanes["vaping"] == today.count("vaping") >= 1
    assert lanes["meals"] == today.count("meal") == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "figure[data-day]")) == 7
