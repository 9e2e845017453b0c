// shapes: a small TVM FFI library, as a library author writes one.
//
//   geom.Rect     width: int, height: int, label: str; Rect(width, height, label); area() -> int
//   geom.square(side, label) -> Rect         a global function
//   geom.describe(rect) -> str               a global function
//   perimeter(width, height) -> int          an exported function (looked up in the library)

// the exported function's type schema is kept in the library, so the generated function is typed
#define TVM_FFI_DLL_EXPORT_INCLUDE_METADATA 1

#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <utility>

namespace shapes {
using namespace tvm::ffi;  // NOLINT
namespace refl = tvm::ffi::reflection;

class RectObj : public Object {
 public:
  int64_t width = 0;
  int64_t height = 0;
  String label;
  RectObj() = default;
  RectObj(int64_t width, int64_t height, String label)
      : width(width), height(height), label(std::move(label)) {}
  int64_t Area() const { return width * height; }
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("geom.Rect", RectObj, Object);
};

class Rect : public ObjectRef {
 public:
  Rect(int64_t width, int64_t height, String label)
      : ObjectRef(make_object<RectObj>(width, height, std::move(label))) {}
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(Rect, ObjectRef, RectObj);
};

TVM_FFI_STATIC_INIT_BLOCK() {
  refl::ObjectDef<RectObj>()
      .def(refl::init<int64_t, int64_t, String>())
      .def_ro("width", &RectObj::width, "Width, in cells.")
      .def_ro("height", &RectObj::height, "Height, in cells.")
      .def_ro("label", &RectObj::label, "What the rectangle is called.")
      .def("area", &RectObj::Area, "Width times height.");
  refl::GlobalDef()
      .def("geom.square",
           [](int64_t side, String label) -> Rect { return Rect(side, side, std::move(label)); },
           "A square of the given side.")
      .def("geom.describe",
           [](const Rect& rect) -> String {
             return std::string(rect->label) + " " + std::to_string(rect->width) + "x" +
                    std::to_string(rect->height);
           },
           "The rectangle's label and size, as text.");
}

int64_t Perimeter(int64_t width, int64_t height) { return 2 * (width + height); }

}  // namespace shapes

TVM_FFI_DLL_EXPORT_TYPED_FUNC(perimeter, shapes::Perimeter);
