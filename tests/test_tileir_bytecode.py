"""Byte-level encodings and bytecode-version gating."""
import numpy as np
import pytest

from tilejit.tileir import (F16, F32, I32, Builder, BytecodeError, Function, Module, TileType,
                            as_version, write_bytecode)
from tilejit.tileir.bytecode import Buf, dense_payload, float_bits
from tilejit.tileir import attrs as A


def test_varint_and_zigzag():
    assert bytes(Buf().varint(0)) == b"\x00"
    assert bytes(Buf().varint(127)) == b"\x7f"
    assert bytes(Buf().varint(128)) == b"\x80\x01"
    assert bytes(Buf().varint(300)) == b"\xac\x02"
    assert bytes(Buf().svarint(0)) == b"\x00"
    assert bytes(Buf().svarint(-1)) == b"\x01"
    assert bytes(Buf().svarint(1)) == b"\x02"
    assert bytes(Buf().svarint(-64)) == b"\x7f"
    # a 64-bit pattern with the sign bit set (f64 -inf) zigzags as int64
    assert bytes(Buf().svarint(0xFFF0000000000000)) == bytes(Buf().varint(0x001FFFFFFFFFFFFF))


def test_header_and_sections():
    f = Function("k", [F32])
    Builder(f.body).return_()
    bc = write_bytecode(Module("m", [f]), "13.3")
    assert bc[:8] == b"\x7fTileIR\x00" and bc[8:12] == bytes([13, 3, 0, 0])
    assert bc[-1] == 0
    assert write_bytecode(Module("m", [f]), "13.4")[8:10] == bytes([13, 4])


def test_dense_payloads():
    assert dense_payload(A.DenseConst(TileType("i32", (4,)), np.int32(7))) == (7).to_bytes(4, "little")
    bools = np.array([True, False, True, True, False, False, False, False, True])
    assert dense_payload(A.DenseConst(TileType("i1", (9,)), bools)) == bytes([0b00001101, 0b1])
    assert dense_payload(A.DenseConst(TileType("i1", ()), np.bool_(True))) == b"\xff"
    assert float_bits(1.0, "f16") == 0x3C00
    assert float_bits(1.0, "bf16") == 0x3F80
    assert float_bits(-2.0, "f32") == 0xC0000000
    assert float_bits(1.0, "tf32") == 0x3F800000 >> 13
    assert len(dense_payload(A.DenseConst(TileType("tf32", ()), np.float32(1.0)))) == 3


def _module_with(build):
    f = Function("k", [F32, I32, F16])
    b = Builder(f.body)
    build(b, *f.args)
    b.return_()
    return Module("m", [f])


@pytest.mark.parametrize("version,build,needs", [
    ("13.1", lambda b, x, i, h: b.binary("atan2", x, x), "13.2"),
    ("13.2", lambda b, x, i, h: b.unary("exp", x, rounding_mode="approx"), "13.3"),
    ("13.1", lambda b, x, i, h: b.unary("negi", i, overflow="no_signed_wrap"), "13.2"),
    ("13.1", lambda b, x, i, h: b.print_("b", [], token=b.print_("a", [])), "13.2"),
])
def test_newer_features_are_refused_for_older_versions(version, build, needs):
    m = _module_with(build)
    with pytest.raises(BytecodeError, match=needs):
        write_bytecode(m, version)
    write_bytecode(m, needs)  # and accepted from the version that introduced them


def test_print_without_token_is_fine_for_13_1():
    write_bytecode(_module_with(lambda b, x, i, h: b.print_("hi %f", [x])), "13.1")


def test_default_valued_attribute_is_dropped_for_older_versions():
    m = _module_with(lambda b, x, i, h: b.unary("exp", x))   # rounding_mode defaults to full
    assert write_bytecode(m, "13.2") != write_bytecode(m, "13.3")


def test_version_parsing():
    assert as_version("13.4") == (13, 4, 0)
    assert str(as_version((13, 2))) == "13.2"
    with pytest.raises(ValueError, match="not supported"):
        as_version("12.9")
    with pytest.raises(ValueError, match="MAJOR.MINOR"):
        as_version("latest")
