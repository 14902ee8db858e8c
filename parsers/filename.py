"""How MySQL and MariaDB name files after identifiers: the ``filename`` character set.

A schema is a folder and a table a file named after the identifier, written in the servers'
``my_charset_filename`` (strings/ctype-utf8 in both sources; MySQL 5.1+, every MariaDB), and MySQL
5.7 and MariaDB name InnoDB tablespaces ``schema/table`` in the same form:

* ``[0-9A-Za-z_]`` stand for themselves;
* some letters take a two-character code ``@`` + row + column from :data:`TWO_CHAR_CODES` (Latin-1
  and Latin Extended letters, Greek, Cyrillic, Armenian, Roman numerals, circled and fullwidth
  Latin letters: ``ü`` is ``@1o``, ``Ü`` ``@1O``);
* any other character of the Basic Multilingual Plane is ``@`` + four hex digits (``-`` is
  ``@002d``, ``中`` ``@4e2d``). Identifiers cannot hold characters beyond it: MariaDB refuses them,
  MySQL stores ``?`` instead.

A partitioned table has a file per partition: ``t#P#p0``, with sub-partitions ``t#P#p0#SP#p0sp0``
(MySQL from 8.0.17 writes ``#p#``/``#sp#``); the partition names are encoded the same way.

This module is pure: names in, names out. :func:`encode`/:func:`decode` convert one identifier,
:func:`split_table_file`/:func:`table_file_stem` a whole file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ibdtool.parsers.errors import ParseError

ESCAPE = "@"
SAFE = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
FIRST_COLUMN = 0x30  # a code's second and third characters run from "0" (0x30) to DEL (0x7F)
EMPTY = "."  # a cell of TWO_CHAR_CODES that holds no letter (no letter of the table is ".")

#: The two-character codes: row (the character after ``@``) -> the letters of columns "0" (0x30)
#: up to 0x7F, "." where none. ``@1o`` is row "1", column "o": ``ü``. Learned from the
#: servers' filename character set and checked against every BMP character by the tests.
TWO_CHAR_CODES: dict[str, str] = {
    "0": ".......................ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓ............àáâãäåæçèéêëìíîïðñòó",
    "1": ".......................ÔÕÖ.ØÙÚÛÜÝÞŸĀĂĄĆĈĊČĎ............ôõößøùúûüýþÿāăąćĉċčď",
    "2": ".......................ĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮ.ĲĴĶ............đēĕėęěĝğġģĥħĩīĭįıĳĵķ",
    "3": "........................ĹĻĽĿŁŃŅŇ.ŊŌŎŐŒŔŖŘŚŜ............ĸĺļľŀłńņňŉŋōŏőœŕŗřśŝ",
    "4": ".......................ŞŠŢŤŦŨŪŬŮŰŲŴŶŹŻŽ................şšţťŧũūŭůűųŵŷźżžſ",
    "5": ".........................................................................ΐ",
    "6": ".......................ΆΈΉΊ.Α.ΓΔΕΖΗ.Ι.ΛΜΝΞΟ............άέήίΰαβγδεζηθικλμνξο",
    "7": "........................Ρ..ΤΥ.ΧΨΩΪΫΌΎΏ.ΒΘϒϓ............πρςστυφχψωϊϋόύώ.ϐϑ",
    "8": ".......................ϔΦΠ..ϚϜϞϠϢϤϦϨϪϬϮΚ.Σ..............ϕϖϗϙϛϝϟϡϣϥϧϩϫϭϯϰϱϲϳ",
    "9": "............................ϽϾϿ........................ϵ϶ϸϻϼ",
    "@": ".................ⒶⒷⒸⒹⒺⒻⒼⒽⒾⒿⓀⓁⓂⓃⓄⓅⓆⓇⓈⓉⓊⓋⓌⓍⓎⓏ......ⓐⓑⓒⓓⓔⓕⓖⓗⓘⓙⓚⓛⓜⓝⓞⓟⓠⓡⓢⓣⓤⓥⓦⓧⓨⓩ",
    "A": "................Ａ",
    "B": "................Ｂ",
    "C": "................Ｃ",
    "D": "................Ｄ",
    "E": "................Ｅ",
    "F": "................Ｆ",
    "G": "АФЈѸҦӍӴ.ՄⅠ......Ｇ.................................ƳǞȈȰ......ḀḨṐṸṠẾỦἈἪ.Ὤᾈᾬ",
    "H": "БХЉѺҨ.ӶԱՅⅡ......Ｈ................................ƂƵǠȊȲ..Ɲ...ḂḪṒṺ.ỀỨἉἫ.Ὥᾉᾭ",
    "I": "ВЦЊѼҪӐӸԲՆⅢ......Ｉ................................ƄƸǢȌ.......ḄḬṔṼ.ỂỪἊἬ.Ὦᾊᾮ",
    "J": "ГЧЋѾҬӒ.ԳՇⅣ......Ｊ................................Ƈ.ǤȎ..Ɠ.Ʈ..ḆḮṖṾ.ỄỬἋἭ.Ὧᾋᾯ",
    "K": "ДШЌҀҮӔ.ԴՈⅤ......Ｋ................................Ƌ.ǦȐ...Ɵ...ḈḰṘẀ.ỆỮἌἮ.ᾺᾌᾸ",
    "L": "ЕЩЍ.ҰӖ.ԵՉⅥ......Ｌ..................................ǨȒ....Ʊ..ḊḲṚẂẠỈỰἍἯὙΆᾍᾹ",
    "M": "ЖЪЎҊҲӘ.ԶՊⅦ......Ｍ................................Ƒ.ǪȔ..Ɣ.Ʋ..ḌḴṜẄẢỊỲἎἸ.Ὲᾎ",
    "N": "ЗЫЏҌҴӚ.ԷՋⅧ......Ｎ................................ǶƼǬȖ.......ḎḶṞẆẤỌỴἏἹὛΈᾏᾼῨ",
    "O": "ИЬѠҎҶӜ.ԸՌⅨ......Ｏ................................ƘǄǮȘȺ......ḐḸ.ẈẦỎỶἘἺ.Ὴᾘ.Ῡ",
    "P": "ЙЭѢҐҸӞԀԹՍⅩ......Ｐ................................ȽǇ.ȚȻ......ḒḺṢẊẨỐỸἙἻὝΉᾙ",
    "Q": "КЮѤҒҺӠԂԺՎⅪ......Ｑ.................................ǊǱȜȾƁ.....ḔḼṤẌẪỒ.ἚἼ.Ὶᾚ",
    "R": "ЛЯѦҔҼӢԄԻՏⅫ......Ｒ................................ȠǍǴȞ.ƆƗ....ḖḾṦẎẬỔ.ἛἽὟΊᾛ",
    "S": "МЀѨҖҾӤԆԼՐⅬ......Ｓ................................ƠǏǸ...Ɩ....ḘṀṨẐẮỖ.ἜἾ.Ὸᾜ.Ῥ",
    "T": "НЁѪҘӀӦԈԽՑⅭ......Ｔ................................ƢǑǺȢ.Ɖ..Ʒ..ḚṂṪẒẰỘ.ἝἿ.Όᾝῌ",
    "U": "ОЂѬҚӁӨԊԾՒⅮ......Ｕ................................ƤǓǼȤ.Ɗ.....ḜṄṬẔẲỚ..Ὀ.Ὺᾞ",
    "V": "ПЃѮҜӃӪԌԿՓⅯ......Ｖ................................ƧǕǾȦ...ƦɁ..ḞṆṮ.ẴỜ..Ὁ.Ύᾟ",
    "W": "РЄѰҞӅӬԎՀՔ.......Ｗ.................................ǗȀȨ.Ə.....ḠṈṰ.ẶỞ..ὊὨῺᾨ",
    "X": "СЅѲҠӇӮ.ՁՕ.......Ｘ.................................ǙȂȪ.......ḢṊṲ.ẸỠ..ὋὩΏᾩ",
    "Y": "ТІѴҢӉӰ.Ղ........Ｙ................................ƬǛȄȬ.ƐƜƩ...ḤṌṴ.ẺỢ.ἨὌὪ.ᾪῘῼ",
    "Z": "УЇѶҤӋӲ.Ճ........Ｚ................................ƯƎȆȮ.......ḦṎṶ.ẼỤ.ἩὍὫ.ᾫῙ",
    "a": "................ａ",
    "b": "................ｂ",
    "c": "................ｃ",
    "d": "................ｄ",
    "e": "................ｅ",
    "f": "................ｆ",
    "g": "афјѹҧӎӵ.մⅰ......ｇ................................ƀƴǟȉȱ.ɝɱʅʙʭḁḩṑṹẛếủἀἢ.ὤᾀᾤῒ",
    "h": "бхљѻҩ.ӷայⅱ......ｈ................................ƃƶǡȋȳ.ɞɲʆʚʮḃḫṓṻ.ềứἁἣ.ὥᾁᾥΐῶ",
    "i": "вцњѽҫӑӹբնⅲ......ｉ................................ƅƹǣȍȴ.ɟɳʇʛʯḅḭṕṽ.ểừἂἤ.ὦᾂᾦ.ῷ",
    "j": "гчћѿҭӓ.գշⅳ......ｊ................................ƈƺǥȏȵ.ɠɴʈʜ.ḇḯṗṿ.ễửἃἥ.ὧᾃᾧ",
    "k": "дшќҁүӕ.դոⅴ......ｋ................................ƌƻǧȑȶ.ɡɵʉʝ.ḉḱṙẁ.ệữἄἦὐὰᾄᾰῖ",
    "l": "ещѝ.ұӗ.եչⅵ......ｌ................................ƍ.ǩȓȷ.ɢɶʊʞ.ḋḳṛẃạỉựἅἧὑάᾅᾱῗ",
    "m": "жъўҋҳә.զպⅶ......ｍ................................ƒƾǫȕȸ.ɣɷʋʟ.ḍḵṝẅảịỳἆἰὒὲᾆᾲ",
    "n": "зыџҍҵӛ.էջⅷ......ｎ................................ƕƽǭȗȹɐɤɸʌʠ.ḏḷṟẇấọỵἇἱὓέᾇᾳῠ",
    "o": "иьѡҏҷӝ.ըռⅸ......ｏ................................ƙǆǯș.ɑɥɹʍʡ.ḑḹṡẉầỏỷἐἲὔὴᾐᾴῡ",
    "p": "йэѣґҹӟԁթսⅹ......ｐ................................ƚǉǰțȼɒɦɺʎʢ.ḓḻṣẋẩốỹἑἳὕήᾑ.ῢ",
    "q": "кюѥғһӡԃժվⅺ......ｑ................................ƛǌǳȝ.ɓɧɻʏʣ.ḕḽṥẍẫồ.ἒἴὖὶᾒᾶΰ",
    "r": "ляѧҕҽӣԅիտⅻ......ｒ................................ƞǎǵȟȿɔɨɼʐʤ.ḗḿṧẏậổ.ἓἵὗίᾓᾷῤ",
    "s": "мѐѩҗҿӥԇլրⅼ......ｓ................................ơǐǹȡɀɕɩɽʑʥ.ḙṁṩẑắỗ.ἔἶ.ὸᾔῂῥ",
    "t": "нёѫҙ.ӧԉխցⅽ......ｔ................................ƣǒǻȣ.ɖɪɾʒʦ.ḛṃṫẓằộ.ἕἷ.όᾕῃῦ",
    "u": "ођѭқӂөԋծւⅾ......ｕ................................ƥǔǽȥ.ɗɫɿʓʧ.ḝṅṭẕẳớ..ὀ.ὺᾖῄῧ",
    "v": "пѓѯҝӄӫԍկփⅿ......ｖ................................ƨǖǿȧ.ɘɬʀʔʨ.ḟṇṯẖẵờ..ὁ.ύᾗ",
    "w": "рєѱҟӆӭԏհք.......ｗ................................ƪǘȁȩ.əɭʁʕʩ.ḡṉṱẗặở..ὂὠὼᾠῆ",
    "x": "сѕѳҡӈӯ.ձօ.......ｘ................................ƫǚȃȫ.ɚɮʂʖʪ.ḣṋṳẘẹỡ..ὃὡώᾡῇῲ",
    "y": "тіѵңӊӱ.ղ........ｙ................................ƭǜȅȭ.ɛɯʃʗʫ.ḥṍṵẙẻợ.ἠὄὢ.ᾢῐῳ",
    "z": "уїѷҥӌӳ.ճ........ｚ................................ưǝȇȯ.ɜɰʄʘʬ.ḧṏṷẚẽụ.ἡὅὣ.ᾣῑ",
}


class FilenameError(ParseError):
    """A name that no server writes: not in the filename encoding, or not storable."""


def _tables() -> tuple[dict[str, str], dict[str, str]]:
    to_code: dict[str, str] = {}
    to_char: dict[str, str] = {}
    for row, cells in TWO_CHAR_CODES.items():
        for i, ch in enumerate(cells):
            if ch != EMPTY:
                code = row + chr(FIRST_COLUMN + i)
                to_code[ch] = code
                to_char[code] = ch
    return to_code, to_char


_TO_CODE, _TO_CHAR = _tables()
_HEX = frozenset("0123456789abcdefABCDEF")


def encode_char(ch: str) -> str:
    """One character in the filename encoding."""
    if ch in SAFE:
        return ch
    code = _TO_CODE.get(ch)
    if code is not None:
        return ESCAPE + code
    cp = ord(ch)
    if cp == 0 or cp > 0xFFFF:
        raise FilenameError(
            f"U+{cp:04X} cannot be part of a MySQL/MariaDB identifier (only U+0001-U+FFFF)"
        )
    return f"{ESCAPE}{cp:04x}"


def encode(name: str) -> str:
    """An identifier as the servers name its file or folder (``my-db`` -> ``my@002ddb``)."""
    return "".join(encode_char(c) for c in name)


def decode(text: str, *, strict: bool = False) -> str:
    """A file or folder name back to the identifier.

    What is not in the encoding (``#``, ``-``, a stray ``@``: temporary ``#sql-…`` files, files a
    server did not write) is kept as it is, or with ``strict`` raises :class:`FilenameError`.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in SAFE:
            out.append(ch)
            i += 1
            continue
        if ch == ESCAPE:
            two = _TO_CHAR.get(text[i + 1 : i + 3])
            if two is not None:
                out.append(two)
                i += 3
                continue
            digits = text[i + 1 : i + 5]
            if len(digits) == 4 and all(d in _HEX for d in digits):
                cp = int(digits, 16)
                if cp and not 0xD800 <= cp <= 0xDFFF:
                    out.append(chr(cp))
                    i += 5
                    continue
        if strict:
            raise FilenameError(f"{text!r}: {ch!r} at {i} is not in the filename encoding")
        out.append(ch)
        i += 1
    return "".join(out)


# --- whole file names ------------------------------------------------------------------------

_PART = re.compile(r"#p#", re.IGNORECASE)
_SUBPART = re.compile(r"#sp#", re.IGNORECASE)
TEMPORARY_PREFIX = "#sql"
LEGACY_PREFIX = "#mysql50#"  # names from before 5.1, kept as they were


@dataclass(frozen=True)
class TableFile:
    """What a table's file name says: the table and, for one partition's file, its names."""

    table: str
    partition: str | None = None
    subpartition: str | None = None
    #: ``#sql-…``: an intermediate table of an ALTER in progress (or left by a crash)
    temporary: bool = False

    @property
    def partition_label(self) -> str | None:
        """``p0`` or ``p0/p0sp0`` (None for an unpartitioned table)."""
        if self.partition is None:
            return None
        return self.partition + (f"/{self.subpartition}" if self.subpartition else "")


def split_table_file(stem: str) -> TableFile:
    """A file name without ``.ibd`` (``t#P#p0#SP#p0sp0``) -> table, partition, sub-partition."""
    if stem.lower().startswith(TEMPORARY_PREFIX):
        return TableFile(stem, temporary=True)
    if stem.startswith(LEGACY_PREFIX):
        return TableFile(stem[len(LEGACY_PREFIX) :])
    table, partition, subpartition = stem, None, None
    m = _PART.search(stem)
    if m:
        table, rest = stem[: m.start()], stem[m.end() :]
        s = _SUBPART.search(rest)
        if s:
            partition, subpartition = decode(rest[: s.start()]), decode(rest[s.end() :])
        else:
            partition = decode(rest)
    return TableFile(decode(table), partition, subpartition)


def table_label(schema: str | None, table: str, partition: str | None = None) -> str:
    """How every view names a table or one of its partitions: ``shop.events`` and
    ``shop.events partition p2023`` (``p0/p0sp0`` for a sub-partition)."""
    base = f"{schema}.{table}" if schema else table
    return base + (f" partition {partition}" if partition else "")


def label_of_path(path: str) -> str | None:
    """:func:`table_label` of a table's file from its folder and name, decoded
    (``shop/events#P#p2023.ibd`` -> ``shop.events partition p2023``); None for a name no
    table's file has (``#sql…`` intermediate tables, names not in the encoding)."""
    parts = path.rstrip("/").split("/")
    stem = parts[-1].removesuffix(".ibd")
    try:
        tf = split_table_file(stem)
        decode(stem.split("#", 1)[0], strict=True)
    except FilenameError:
        return None
    if tf.temporary or not tf.table:
        return None
    folder = parts[-2] if len(parts) > 1 else None
    return table_label(decode(folder) if folder else None, tf.table, tf.partition_label)


def table_file_stem(
    table: str,
    partition: str | None = None,
    subpartition: str | None = None,
    *,
    lower_separators: bool = False,
) -> str:
    """The file name (without ``.ibd``) of a table or of one of its partitions.

    ``lower_separators``: as MySQL writes them from 8.0.17 on: ``#p#``/``#sp#`` and the
    partition names in lower case (``T#p#pa#sp#pasp0`` for partition ``Pa``, seen on 8.0.33;
    8.0.15, 5.7 and MariaDB write ``T#P#Pa#SP#Pasp0``).
    """
    p, sp = ("#p#", "#sp#") if lower_separators else ("#P#", "#SP#")
    if lower_separators:
        partition = partition.lower() if partition is not None else None
        subpartition = subpartition.lower() if subpartition is not None else None
    stem = encode(table)
    if partition is not None:
        stem += p + encode(partition)
        if subpartition is not None:
            stem += sp + encode(subpartition)
    return stem


def tablespace_name(schema: str, table: str) -> str:
    """``schema/table`` as MySQL 5.7 and MariaDB name a file-per-table tablespace."""
    return f"{encode(schema)}/{encode(table)}"


__all__ = [
    "TWO_CHAR_CODES",
    "FilenameError",
    "TableFile",
    "decode",
    "encode",
    "encode_char",
    "label_of_path",
    "split_table_file",
    "table_file_stem",
    "table_label",
    "tablespace_name",
]
