#!/usr/bin/env python3
"""Writes the habit-tracker fixtures in Fixtures/habits/ (run from the repository root).

Loop Habit Tracker's CSV export in both layouts (before 2.3.1: headerless per-habit files with
integer codes; from 2.3.1: named codes, notes and a Habits.csv with type, unit and target), its
SQLite backup (schema versions 21 and 25), HabitBull's CSV export, generic CSVs with their
mappings, and hostile or broken files. The formats follow /work/shared/notes/file-formats.md
(sections 3 and 6); the expected records are in Tests/HabitImportTests.

Four Loop habits over 2024-03-01..07 (the export is dated 2024-03-07):
  Meditate       yes/no, 1 per day        done 01, 02 (note), 05; skipped 03; unknown 04; not done 06 (note)
  Water glasses  numerical, >= 8 glasses  8, 2.5, 12 (01-03); 0 on 05; skipped 06
  Gym            yes/no, 3 per 7 days     done 01, 03, 05 (Loop computes YES_AUTO on 02, 04, 06)
  Sugar          numerical, <= 30 g       45 on 02, 20 on 04
"""
import csv
import io
import os
import shutil
import sqlite3
from datetime import date, datetime, timedelta, timezone

OUT = "Fixtures/habits"
DAYS = [date(2024, 3, d) for d in range(1, 8)]
YES_MANUAL, YES_AUTO, NO, SKIP, UNKNOWN = 2, 1, 0, 3, -1
NAMES = {2: "YES_MANUAL", 1: "YES_AUTO", 0: "NO", 3: "SKIP", -1: "UNKNOWN"}

# (position, name, type, unit, target type, target value, freq num, freq den)
HABITS = [
    (1, "Meditate", 0, "", 0, 0.0, 1, 1),
    (2, "Water glasses", 1, "glasses", 0, 8.0, 1, 1),
    (3, "Gym", 0, "", 0, 0.0, 3, 7),
    (4, "Sugar", 1, "g", 1, 30.0, 1, 1),
]
# What the user entered (the backup): habit -> {day: (value, note)}
ENTRIES = {
    "Meditate": {1: (2, None), 2: (2, "Forgot to do it, really"), 3: (SKIP, None), 4: (UNKNOWN, None), 5: (2, None),
                 6: (NO, 'sick, "flu"')},
    "Water glasses": {1: (8000, None), 2: (2500, None), 3: (12000, None), 5: (0, None), 6: (SKIP, None)},
    "Gym": {1: (2, None), 3: (2, None), 5: (2, None)},
    "Sugar": {2: (45000, None), 4: (20000, None)},
}


def computed(name, day):
    """The value Loop's CSV lists for a day: the entry, YES_AUTO for Gym's covered days, else UNKNOWN."""
    if day.day in ENTRIES[name]:
        return ENTRIES[name][day.day]
    if name == "Gym":
        return (YES_AUTO, None) if day.day in (2, 4, 6) else (NO, None)
    return (UNKNOWN, None)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(text)


def rows(lines):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    for line in lines:
        w.writerow(line)
    return buf.getvalue()


def folder(position, name):
    return "%03d %s" % (position, "".join(c for c in name if c.isalnum() or c in " ._-")[:100])


def loop_modern(base, per_habit=True):
    habits = [["Position", "Name", "Type", "Question", "Description", "FrequencyNumerator", "FrequencyDenominator", "Color",
               "Unit", "Target Type", "Target Value", "Archived?"]]
    for pos, name, typ, unit, ttype, tval, num, den in HABITS:
        numeric = typ == 1
        habits.append(["%03d" % pos, name, "NUMERICAL" if numeric else "YES_NO", "Did you %s today?" % name.lower(), "",
                       num, den, "#FF8F00", unit if numeric else "", ("AT_MOST" if ttype else "AT_LEAST") if numeric else "",
                       tval if numeric else "", "false"])
    write(f"{base}/Habits.csv", rows(habits))
    for pos, name, *_ in HABITS:
        if not per_habit:
            break
        lines = [["Date", "Value", "Notes"]]
        for day in reversed(DAYS):
            value, note = computed(name, day)
            lines.append([day.isoformat(), NAMES.get(value, str(value)), note or ""])
        write(f"{base}/{folder(pos, name)}/Checkmarks.csv", rows(lines))
        write(f"{base}/{folder(pos, name)}/Scores.csv", rows([["Date", "Score"]] + [[d.isoformat(), "%.4f" % 0.25] for d in reversed(DAYS)]))
    wide = "Date," + ",".join(h[1] for h in HABITS) + ",\n"
    for day in reversed(DAYS):
        wide += day.isoformat() + "," + ",".join(NAMES.get(computed(h[1], day)[0], str(computed(h[1], day)[0])) for h in HABITS) + ",\n"
    write(f"{base}/Checkmarks.csv", wide)
    scores = "Date," + ",".join(h[1] for h in HABITS) + ",\n"
    for day in reversed(DAYS):
        scores += day.isoformat() + "," + ",".join("0.2500" for _ in HABITS) + ",\n"
    write(f"{base}/Scores.csv", scores)


def loop_old(base):
    habits = [["Position", "Name", "Question", "Description", "NumRepetitions", "Interval", "Color"]]
    for pos, name, typ, unit, ttype, tval, num, den in HABITS:
        habits.append(["%03d" % pos, name, "", "", num, den, "#FF8F00"])
    write(f"{base}/Habits.csv", rows(habits))
    for pos, name, *_ in HABITS:
        text = "".join("%s,%d\n" % (d.isoformat(), computed(name, d)[0]) for d in reversed(DAYS))
        write(f"{base}/{folder(pos, name)}/Checkmarks.csv", text)
        write(f"{base}/{folder(pos, name)}/Scores.csv", "".join("%s,%.4f\n" % (d.isoformat(), 0.25) for d in reversed(DAYS)))


def loop_backup(path, version):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    v23 = ", question TEXT" if version >= 23 else ""
    v24 = ", uuid TEXT" if version >= 24 else ""
    db.execute("CREATE TABLE android_metadata (locale TEXT)")
    db.execute("INSERT INTO android_metadata VALUES ('en_US')")
    db.execute(f"""CREATE TABLE Habits (id INTEGER PRIMARY KEY AUTOINCREMENT, archived INTEGER, color INTEGER, description TEXT,
        freq_den INTEGER, freq_num INTEGER, highlight INTEGER, name TEXT, position INTEGER, reminder_hour INTEGER,
        reminder_min INTEGER, reminder_days INTEGER NOT NULL DEFAULT 127, type INTEGER NOT NULL DEFAULT 0,
        target_type INTEGER NOT NULL DEFAULT 0, target_value REAL NOT NULL DEFAULT 0, unit TEXT NOT NULL DEFAULT ''{v23}{v24})""")
    notes = ", notes TEXT" if version >= 25 else ""
    db.execute(f"""CREATE TABLE Repetitions (id INTEGER PRIMARY KEY AUTOINCREMENT, habit INTEGER NOT NULL REFERENCES Habits(id),
        timestamp INTEGER NOT NULL, value INTEGER NOT NULL{notes})""")
    if version >= 22:
        db.execute("CREATE UNIQUE INDEX idx_repetitions_habit_timestamp ON Repetitions(habit, timestamp)")
    else:
        db.execute("CREATE INDEX idx_repetitions_habit_timestamp ON Repetitions(habit, timestamp)")
    for pos, name, typ, unit, ttype, tval, num, den in HABITS:
        db.execute("""INSERT INTO Habits (id, archived, color, description, freq_den, freq_num, highlight, name, position, type,
            target_type, target_value, unit) VALUES (?, 0, 8, '', ?, ?, 0, ?, ?, ?, ?, ?, ?)""",
                   (pos + 10, den, num, name, pos - 1, typ, ttype, tval, unit))
    for pos, name, *_ in HABITS:
        for day, (value, note) in sorted(ENTRIES[name].items()):
            ms = int(datetime(2024, 3, day, tzinfo=timezone.utc).timestamp() * 1000)
            if version >= 25:
                db.execute("INSERT INTO Repetitions (habit, timestamp, value, notes) VALUES (?, ?, ?, ?)", (pos + 10, ms, value, note))
            else:
                db.execute("INSERT INTO Repetitions (habit, timestamp, value) VALUES (?, ?, ?)", (pos + 10, ms, value))
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


def other_sqlite(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    db.execute("INSERT INTO notes (body) VALUES ('not a habit tracker')")
    db.execute("PRAGMA user_version = 25")
    db.commit()
    db.close()


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    loop_modern(f"{OUT}/loop-csv-2.3.1")
    loop_modern(f"{OUT}/loop-csv-2.3.1-wide-only", per_habit=False)
    loop_old(f"{OUT}/loop-csv-2.3.0")
    loop_backup(f"{OUT}/Loop Habits Backup 2024-03-07 101500.db", 25)
    loop_backup(f"{OUT}/loop-backup-v21.db", 21)
    loop_backup(f"{OUT}/hostile/loop-backup-v26.db", 26)
    loop_backup(f"{OUT}/hostile/loop-backup-v19.db", 19)
    other_sqlite(f"{OUT}/hostile/other-app.db")
    hb = [["HabitName", "HabitDescription", "HabitCategory", "CalendarDate", "Value", "CommentText"],
          ["Read", "Read a book", "Learning", "2024-03-01", "1", ""],
          ["Read", "Read a book", "Learning", "2024-03-02", "0", "too tired, slept\nearly"],
          ["Read", "Read a book", "Learning", "2024-03-03", "1", '=HYPERLINK("http://example.invalid/x","click")'],
          ["Pushups", "", "Fitness", "3/1/2024", "25", ""],
          ["Pushups", "", "Fitness", "3/2/2024", "0", ""],
          ["Pushups", "", "Fitness", "3/3/2024", "40", "+1 rep"]]
    write(f"{OUT}/habitbull.csv", "\ufeff" + rows(hb).replace("\n", "\r\n").replace("slept\r\nearly", "slept\nearly"))
    write(f"{OUT}/generic/drinks.csv", rows([
        ["Date", "Drink", "Amount", "Unit", "Comment"],
        ["2024-03-01T08:00:00+01:00", "coffee", "200", "ml", "-2+3"],
        ["2024-03-01 13:30", "coffee", "150", "ml", "@SUM(A1:A9)"],
        ["2024-03-02T09:15:00Z", "tea", "", "", 'said "no, thanks"'],
    ]))
    write(f"{OUT}/generic/drinks.toml", '\n'.join([
        '# Drinks from a spreadsheet: every row a habit event named by its Drink column.',
        'record = "habit"', 'time_column = "Date"', 'time_zone = "Europe/Berlin"', 'value_column = "Amount"',
        'unit_column = "Unit"', 'name_column = "Drink"', 'note_column = "Comment"', '']))
    write(f"{OUT}/generic/weight.csv", "when;kg\n01.03.2024 07:30;72,4\n".replace("72,4", "72.4") + "02.03.2024 07:45;72.1\n")
    write(f"{OUT}/generic/weight.toml", '\n'.join([
        'record = "measurement"', 'name = "weight"', 'time_column = "when"', 'date_format = "dd.MM.yyyy HH:mm"',
        'time_zone = "Europe/Berlin"', 'value_column = "kg"', 'unit = "kg"', 'delimiter = ";"', '']))
    header = "HabitName,HabitDescription,HabitCategory,CalendarDate,Value,CommentText\n"
    write(f"{OUT}/hostile/habitbull-bad-quote.csv", header + "Read,,,2024-03-01,1,ok\nRead,,,2024-03-02,1,he said \"hi\"\n")
    write(f"{OUT}/hostile/habitbull-columns.csv", header + "Read,,,2024-03-01,1,ok\nRead,,,2024-03-02,1\n")
    write(f"{OUT}/hostile/habitbull-bad-date.csv", header + "Read,,,2024-03-01,1,\nRead,,,2024-02-30,1,\n")
    write(f"{OUT}/hostile/habitbull-unclosed.csv", header + "Read,,,2024-03-01,1,\"never closed\n")


if __name__ == "__main__":
    main()
