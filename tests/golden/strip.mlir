// RUN: irprof opt %s --pass-pipeline='builtin.module(irprof-strip)'
// Only irprof's attributes go; the op's own attributes stay.

module attributes {irprof.summary = {framework = "tf"}} {
  func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %0 = "tf.Relu"(%arg0) {device = "", irprof.profile = {count = 1 : i64}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %1 = "tf.Relu"(%0) {profiler_data = {dur = 5 : i64, ts = 1 : i64}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    return %1 : tensor<2x2xf32>
  }
}

// CHECK-NOT: irprof.summary
// CHECK: %0 = "tf.Relu"(%arg0) {device = ""} : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %1 = "tf.Relu"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NOT: profiler_data
