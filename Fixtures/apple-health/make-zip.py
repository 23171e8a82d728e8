#!/usr/bin/env python3
"""Writes Fixtures/apple-health/healthkit-to-sqlite-export.zip: the layout of healthkit-to-sqlite's
own test zip (tests/zip_contents), i.e. apple_health_export/export.xml (healthkit-to-sqlite-zip-export.xml)
and the route its Workout references, apple_health_export/workout-routes/route_2019-06-11_3.00pm.gpx
(apple-health-workout-route.gpx). Deterministic (fixed dates).

    python3 Fixtures/apple-health/make-zip.py
"""
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATE = (2019, 7, 19, 10, 36, 10)

with zipfile.ZipFile(HERE / "healthkit-to-sqlite-export.zip", "w", zipfile.ZIP_DEFLATED) as z:
    for name, source in [("apple_health_export/", None),
                         ("apple_health_export/export.xml", "healthkit-to-sqlite-zip-export.xml"),
                         ("apple_health_export/workout-routes/route_2019-06-11_3.00pm.gpx", "apple-health-workout-route.gpx")]:
        info = zipfile.ZipInfo(name, DATE)
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, (HERE / source).read_bytes() if source else b"")
