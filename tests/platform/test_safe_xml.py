"""hdrm.platform.safe_xml: the C parser where no entity can be declared, defusedxml elsewhere."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import defusedxml.ElementTree as SafeET
import pytest

from hdrm.platform import safe_xml
from hdrm.platform.safe_xml import UnsafeXmlError, parse_xml_file

PLAIN = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE platform SYSTEM "x.dtd">\n'
         '<platform version="4.1"><zone id="AS0"><host id="h\u00e9" speed="1Gf">'
         '<prop id="a" value="b"/></host></zone></platform>')


def _tree(root: ET.Element) -> list:
    return [(e.tag, dict(e.attrib), e.text, e.tail) for e in root.iter()]


@pytest.mark.parametrize("head, fast", [
    (b"", True),
    (b"\xef\xbb\xbf", True),  # UTF-8 byte-order mark
])
def test_utf8_files_take_the_c_parser_and_give_defusedxml_s_tree(tmp_path, head, fast):
    path = tmp_path / "p.xml"
    path.write_bytes(head + PLAIN.encode())
    assert safe_xml._cannot_declare_entities(path.read_bytes()) is fast
    assert _tree(parse_xml_file(path)) == _tree(SafeET.parse(str(path)).getroot())


@pytest.mark.parametrize("data", [
    PLAIN.encode("utf-16"),  # "<!ENTITY" would not be these bytes: defusedxml reads it
    PLAIN.replace("UTF-8", "latin-1").encode("latin-1"),
    b'<?xml version="1.0"?><!DOCTYPE p [<!ELEMENT p ANY>]><p/>'.replace(b"ELEMENT", b"ENTITY"),
])
def test_other_encodings_and_declarations_go_through_defusedxml(data):
    assert not safe_xml._cannot_declare_entities(data)


def test_entities_are_refused_with_defusedxml_s_reason(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE platform [<!ENTITY a "aaaa">]>\n'
                    '<platform><host id="&a;"/></platform>')
    with pytest.raises(UnsafeXmlError, match=r"^EntitiesForbidden\(name='a'"):
        parse_xml_file(path)
    utf16 = tmp_path / "p16.xml"
    utf16.write_bytes(path.read_text().replace('version="1.0"', 'version="1.0" encoding="UTF-16"')
                      .encode("utf-16"))
    with pytest.raises(UnsafeXmlError, match=r"^EntitiesForbidden"):
        parse_xml_file(utf16)


def test_syntax_errors_give_the_same_position_on_both_paths(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text('<platform version="4.1">\n<zone>\n<host id="a">\n</platform>')
    with pytest.raises(ET.ParseError) as fast:
        parse_xml_file(path)
    with pytest.raises(ET.ParseError) as slow:
        SafeET.parse(str(path))
    assert fast.value.position == slow.value.position == (4, 2)
    assert str(fast.value) == str(slow.value)
