"""The U.S. EPA Air Quality Index as the air-quality case study uses it (seed 003 §V.F.2).

Source: U.S. EPA, *Technical Assistance Document for the Reporting of Daily Air Quality — the
Air Quality Index (AQI)*, EPA-454/B-16-002, May 2016, Table 5 ("Breakpoints for the AQI") and
the truncation rules of its section "Calculating the AQI". Six categories, from Good to
Hazardous (the document's two Hazardous rows, AQI 301-400 and 401-500, are one grade here):

Ranges of the (truncated) average, per grade: Good, Moderate, Unhealthy for Sensitive Groups
(USG), Unhealthy, Very Unhealthy, Hazardous:

* O3, 8-hour, ppm: 0.000-0.054, 0.055-0.070, 0.071-0.085, 0.086-0.105, 0.106-0.200, and the
  1-hour values above;
* PM2.5, 24-hour, µg/m³: 0.0-12.0, 12.1-35.4, 35.5-55.4, 55.5-150.4, 150.5-250.4,
  250.5-500.4;
* PM10, 24-hour, µg/m³: 0-54, 55-154, 155-254, 255-354, 355-424, 425-604;
* CO, 8-hour, ppm: 0.0-4.4, 4.5-9.4, 9.5-12.4, 12.5-15.4, 15.5-30.4, 30.5-50.4;
* SO2, 1-hour, ppb: 0-35, 36-75, 76-185, 186-304, and (24-hour) 305-604, 605-1004;
* NO2, 1-hour, ppb: 0-53, 54-100, 101-360, 361-649, 650-1249, 1250-2049.

Concentrations are truncated before the table is read: O3 to 3 decimal places (ppm), PM2.5
and CO to 1, PM10, SO2 and NO2 to integers. A truncated value ``≤ b`` for a breakpoint ``b``
on that grid is a raw value ``< b + one grid step``, so the patterns compare the raw average
with the next grid value (``O3 avg < 0.055`` is Good) — exactly the table, without a
truncation function.

**Decisions** (the case study reads one averaging window per pollutant, seed 003 §V.F.2): O3
uses its 8-hour breakpoints, and an 8-hour average above 0.200 ppm — where the table switches
to 1-hour values — is Hazardous; SO2 uses its 1-hour average throughout, also for the two top
categories whose breakpoints the table gives for 24-hour averages. Above the last breakpoint
(beyond the AQI) a value stays Hazardous.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal

#: the six grades, from 1 (Good) to 6 (Hazardous)
GRADES = ("Good", "Moderate", "UnhealthyForSensitiveGroups", "Unhealthy", "VeryUnhealthy",
          "Hazardous")

#: pollutant -> (averaging window in hours, unit, decimals kept by truncation, the lowest
#: truncated value of grades 2..6 as the table gives it)
TABLE: dict[str, tuple[int, str, int, tuple[str, ...]]] = {
    "CO": (8, "ppm", 1, ("4.5", "9.5", "12.5", "15.5", "30.5")),
    "O3": (8, "ppm", 3, ("0.055", "0.071", "0.086", "0.106", "0.201")),
    "NO2": (1, "ppb", 0, ("54", "101", "361", "650", "1250")),
    "SO2": (1, "ppb", 0, ("36", "76", "186", "305", "605")),
    "PM10": (24, "µg/m³", 0, ("55", "155", "255", "355", "425")),
    "PM25": (24, "µg/m³", 1, ("12.1", "35.5", "55.5", "150.5", "250.5")),
}

#: the pollutants' names in the readings (PM2.5 is written PM25 in type names)
POLLUTANTS = tuple(TABLE)


def truncate(value: float, decimals: int) -> Decimal:
    """The EPA truncation of a concentration (toward zero, exact decimal arithmetic)."""
    q = Decimal(1).scaleb(-decimals)
    return Decimal(repr(value)).quantize(q, rounding=ROUND_FLOOR)


def grade(pollutant: str, average: float) -> int:
    """The grade (1..6) of an average concentration, read from the table after truncation."""
    _, _, decimals, lows = TABLE[pollutant]
    c = truncate(average, decimals)
    return 1 + sum(c >= Decimal(low) for low in lows)
