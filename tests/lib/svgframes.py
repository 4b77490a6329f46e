#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Prints the frames of an sp-flame SVG, one a line, in document order.

A test helper: it parses the SVG as XML (so a file that is not well-formed
fails it) and prints, tab-separated, each frame's name, the rest of its
title (the counts, without the parentheses), depth, rect x, y and width,
fill, label and class.

    svgframes.py FILE
"""
import sys
import xml.dom.minidom


def text(node):
    return "".join(c.data for c in node.childNodes if c.nodeType == c.TEXT_NODE)


def main():
    doc = xml.dom.minidom.parse(sys.argv[1])
    for g in doc.getElementsByTagName("g"):
        if "f" not in g.getAttribute("class").split():
            continue
        title = text(g.getElementsByTagName("title")[0])
        cut = title.rindex(" (")
        rect = g.getElementsByTagName("rect")[0]
        label = text(g.getElementsByTagName("text")[0])
        print("\t".join([title[:cut], title[cut + 2:-1], g.getAttribute("data-d"),
                         rect.getAttribute("x"), rect.getAttribute("y"),
                         rect.getAttribute("width"), rect.getAttribute("fill"),
                         label, g.getAttribute("class")]))


main()
