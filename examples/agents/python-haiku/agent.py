#!/usr/bin/env python3
"""haiku-write: a Tessera agent in Python, standard library only.

Tessera's worker (`tessera worker --card card.yaml`) keeps the chain, the
money and the blobs; this program only does the work. The worker POSTs each
task to it as JSON (docs/handler.schema.json) and takes back one of:

    {"result": {...}}                      the work, checked against the card's schema
    {"decline": {"reason": "..."}}         cannot do it: the funder is refunded at once
    {"hire": [{"capability": ..., "spec": ...}]}   buy part of it from another agent

Asked for a haiku "in French" (or Spanish), it writes the haiku, hires a
`translate` agent for it (the worker funds the child task within the card's
`delegates` limit) and answers with both once the translation is back.

Run:  python3 agent.py --port 8707      (port 0: any free port, printed)
"""

import argparse
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_REQUEST_BYTES = 1 << 20
LANGUAGES = {"french": "French", "spanish": "Spanish", "english": "English"}
STOP = set(
    "a an the of on about for to in into with and or write compose make give me us "
    "please haiku haikus poem short some one it its this that then".split()
)
# Filler words by syllable count, taken in turn so each line reads differently.
FILLERS = {
    1: ["still", "soft", "slow", "light", "cold", "rain", "wind", "dusk", "moon", "dawn"],
    2: ["quiet", "falling", "golden", "silver", "morning", "hollow", "gentle", "shadow"],
    3: ["whispering", "wandering", "lingering", "evening", "glimmering"],
}


def syllables(word):
    """Vowel groups, a silent final e left out; at least one."""
    w = re.sub(r"[^a-z]", "", word.lower())
    if not w:
        return 0
    groups = re.findall(r"[aeiouy]+", w)
    n = len(groups)
    if w.endswith("e") and not w.endswith(("le", "ee")) and n > 1:
        n -= 1
    return max(n, 1)


def topic_of(task):
    """The words after "about"/"on" in the spec, else its content words,
    else the first words of an upstream result."""
    spec = task.get("spec") or ""
    m = re.search(r"\b(?:about|on|of)\s+(.+)", spec, re.IGNORECASE)
    text = m.group(1) if m else spec
    text = re.split(r"\bin (?:french|spanish|english)\b|[.,;:!?]", text, flags=re.IGNORECASE)[0]
    words = [w for w in re.findall(r"[A-Za-z']+", text) if w.lower() not in STOP]
    if not words:
        for given in task.get("inputs") or []:
            words = [w for w in re.findall(r"[A-Za-z']+", given.get("output", "")) if w.lower() not in STOP]
            if words:
                break
    return [w.lower() for w in words[:3]]


def line(target, seed, topic):
    """A line of exactly `target` syllables: a topic word, then fillers."""
    words, count = [], 0
    for w in topic:
        if count + syllables(w) <= target - 1:
            words.append(w)
            count += syllables(w)
            break
    i = seed
    while count < target:
        left = target - count
        size = 3 if left >= 5 else min(left, 2 if left >= 3 else 1)
        pool = FILLERS[size]
        w = pool[i % len(pool)]
        i += 1
        words.append(w)
        count += syllables(w)
    return " ".join(words)


def haiku(topic):
    seed = sum(map(ord, "".join(topic)))
    lines = [line(5, seed, topic), line(7, seed + 3, list(reversed(topic))), line(5, seed + 7, topic[1:] or topic)]
    lines = [l[0].upper() + l[1:] for l in lines]
    return lines


def answer(task):
    topic = topic_of(task)
    if not topic:
        return {"decline": {"reason": "no topic: say what the haiku is about"}}
    lines = haiku(topic)
    result = {
        "haiku": "\n".join(lines),
        "lines": lines,
        "syllables": [sum(syllables(w) for w in l.split()) for l in lines],
        "topic": " ".join(topic),
    }
    wanted = re.search(r"\bin (french|spanish)\b", task.get("spec") or "", re.IGNORECASE)
    if wanted:
        language = LANGUAGES[wanted.group(1).lower()]
        hired = [h for h in task.get("hired") or [] if h.get("capability") == "translate"]
        may = {h["capability"] for h in (task.get("limits") or {}).get("may_hire", [])}
        if hired:
            result["translation"] = (hired[0].get("result") or {}).get("text", "")
            result["language"] = language
        elif "translate" in may:
            return {"hire": [{"capability": "translate", "spec": f"Translate to {language}: {result['haiku']}"}]}
        else:
            return {"decline": {"reason": f"asked for {language}, and this card hires no translator"}}
    return {"result": result}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > MAX_REQUEST_BYTES:
            return self.reply(413, {"error": "request too large or empty"})
        try:
            task = json.loads(self.rfile.read(length))
        except ValueError:
            return self.reply(400, {"error": "not JSON"})
        if task.get("tessera") != 1:
            return self.reply(400, {"error": "unknown wire version"})
        self.reply(200, answer(task))

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        sys.stderr.write("haiku-write: " + (fmt % args) + "\n")


def main():
    p = argparse.ArgumentParser(description="haiku-write: a Tessera agent (HTTP handler)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8707, help="0 picks a free port")
    args = p.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    host, port = server.server_address[:2]
    print(f"haiku-write agent listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
