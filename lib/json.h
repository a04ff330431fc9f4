/* SPDX-License-Identifier: MIT */
/*
 * json — the JSON strings the daemon writes (/status.json, --format=json), one
 * escaping for all of them.
 */
#ifndef IOPULSE_JSON_H
#define IOPULSE_JSON_H

#include <stddef.h>

#include "lib/buf.h"

/* @s as a JSON string, quotes included, appended to @out: " and \ escaped,
 * control characters (and DEL) as \u00XX, bytes that are not valid UTF-8 as
 * \ufffd (paths and messages come from the system, not always in UTF-8). */
void json_string(struct buf *out, const char *s);

#endif
