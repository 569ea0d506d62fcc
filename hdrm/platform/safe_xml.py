"""Parse an XML file safely, at the speed of the C parser when the file cannot declare entities.

defusedxml refuses entity declarations (exponential expansion, external entities) by handling
every parser event in Python, which costs a 1,024-host platform file about 15 ms. Its checks can
only fire on an entity declaration, which is written ``<!ENTITY``: when the file is UTF-8 (no
byte-order mark of another encoding, no encoding declaration naming another one) and holds no
such bytes, nothing can be declared, and the standard library's C parser builds the same tree.
Any other file goes through defusedxml, which refuses or parses it as before.

SimGrid's platform parser (Batsim's) accepts blanks and comments before the XML declaration,
which an XML parser refuses ("XML or text declaration not at start of entity"): Batsim's own
``platforms/*.xml`` include files that begin with an empty line. Such a declaration is moved to
the start of the data before parsing; what preceded it follows it, so every later line keeps
its number in error messages.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["UnsafeXmlError", "parse_xml_file"]

#: Byte-order marks of UTF-16 and UTF-32 (UTF-8's own, EF BB BF, is fine).
_OTHER_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
#: An XML declaration's encoding (the declaration is the first thing in the file).
_ENCODING_RE = re.compile(rb"^(?:\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)")
_UTF8_NAMES = (b"utf-8", b"utf8", b"us-ascii", b"ascii")
#: Blanks and comments, then an XML declaration (the declaration ends on its own line).
_LATE_DECLARATION_RE = re.compile(rb"((?:[ \t\r\n]+|<!--(?:[^-]|-[^-])*-->)+)(<\?xml\s[^>\n]*\?>)")
_UTF8_BOM = b"\xef\xbb\xbf"


class UnsafeXmlError(Exception):
    """The file declares entities (defusedxml's refusal is the cause: ``__cause__``)."""


def parse_xml_file(path: str | Path) -> ET.Element:
    """The root element of an XML file, parsed safely (no entity declarations).

    Raises:
        FileNotFoundError, OSError: the file cannot be read.
        xml.etree.ElementTree.ParseError: the file is not well-formed (``position`` holds the
            line and column).
        UnsafeXmlError: the file declares entities (``str`` gives defusedxml's reason).
    """
    data = declaration_first(Path(path).read_bytes())
    if _cannot_declare_entities(data):
        return ET.fromstring(data)
    import defusedxml  # only for files that might declare entities
    import defusedxml.ElementTree as SafeET

    try:
        return SafeET.fromstring(data)
    except defusedxml.DefusedXmlException as exc:
        raise UnsafeXmlError(str(exc)) from exc


def declaration_first(data: bytes) -> bytes:
    """``data`` with an XML declaration that follows blanks or comments moved to the start
    (after a UTF-8 byte-order mark), the blanks and comments right after it; any other data
    unchanged. Lines after the declaration keep their numbers."""
    bom = _UTF8_BOM if data.startswith(_UTF8_BOM) else b""
    match = _LATE_DECLARATION_RE.match(data, len(bom))
    if match is None:
        return data
    return bom + match.group(2) + match.group(1) + data[match.end():]


def _cannot_declare_entities(data: bytes) -> bool:
    """True when ``data`` is UTF-8 XML without the bytes ``<!ENTITY``."""
    if b"<!ENTITY" in data or data.startswith(_OTHER_BOMS) or b"\x00" in data[:4]:
        return False
    declared = _ENCODING_RE.match(data[:200])
    return declared is None or declared.group(1).lower() in _UTF8_NAMES
