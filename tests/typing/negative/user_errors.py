"""A user's program over the generated testing package in which each line after the imports and
the values is wrong: what mypy --strict and pyright strict must report on it is committed beside
it (user_errors.mypy.txt, user_errors.pyright.txt) and diffed by
tests/typing/test_type_errors_golden.py. Never run; checked only."""

from tvmffi_testing.testing import (
    SchemaAllTypes,
    TestCompare,
    TestCxxAutoInitSimple,
    TestEnumVariant,
    TestIntPair,
    add_one,
    schema_id_arr_int,
    schema_id_opt_int,
)

pair = TestIntPair(1, 2)
s = SchemaAllTypes.make_with(1, 2.0, "x")
c = TestCompare(1, "k", 0)

# constructors
TestIntPair("1", 2)  # a str where an int is taken
TestIntPair(1)  # an argument missing
TestCxxAutoInitSimple(x=1, z=2)  # a keyword the auto-init does not have
SchemaAllTypes()  # a class the registry gives no constructor
TestEnumVariant("Alpha")  # an enum is not constructed: its entries are read
# functions and methods
add_one("1")  # a str where an int is taken
add_one(1, 2)  # one argument too many
add_one(_0=1)  # a parameter the schema does not name is positional-only
schema_id_arr_int(["a"])  # a list of str where a sequence of int is taken
pair.sum(1)  # a method that takes no argument
s.append_int([1], "2")  # a method's argument of the wrong type
pair.replace(c=1)  # a field the class does not have
# fields
c.key = 3  # a read-only field
pair.a = 1  # a read-only field
s.v_int = "3"  # a writable field given the wrong type
s.v_arr_int = [1.5]  # a container field given items of the wrong type
pair.no_such_field = 1  # a field the class does not have
# results
text: str = add_one(1)  # an int is not a str
count: int = schema_id_opt_int(None)  # an Optional result used as if it could not be None
name: int = c.name  # a str field read as an int
