// RUN: irprof opt %s --pass-pipeline='builtin.module(canonicalize, irprof-annotate{profile=%S/annotate.opprofile.json})'
// TF ops (generic form, unregistered dialect) are annotated by node name, after a native pass.

func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = "tf.MatMul"(%arg0, %arg0) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc(fused["MatMul:", "dense/MatMul"])
  %1 = "tf.Relu"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32> loc(fused["Relu:", "dense/Relu"])
  %2 = "tf.Identity"(%1) : (tensor<2x2xf32>) -> tensor<2x2xf32> loc(fused["Identity:", "Identity"])
  return %2 : tensor<2x2xf32>
}

// CHECK: module attributes {irprof.summary = {attributed_ns = 9000 : i64, entries_unmatched = 1 : i64, framework = "tf", level = "tf", nontrivial_coverage = 1.000000e+00 : f64, ops_annotated = 2 : i64, ops_total = 5 : i64, profiled_ns = 10000 : i64, reattached_from = "", source_trace = "trace/host.xplane.pb", time_coverage = 9.000000e-01 : f64}}
// CHECK: "tf.MatMul"(%arg0, %arg0) {irprof.profile = {count = 3 : i64, first_ts_ns = 1000 : i64, fraction = 6.000000e-01 : f64, fused_with = [], kernels = ["dense/MatMul:_MklMatMul"], max_ns = 2500 : i64, mean_ns = 2000 : i64, min_ns = 1500 : i64, source = "xplane", total_ns = 6000 : i64}}
// CHECK-NEXT: "tf.Relu"(%0) {irprof.profile = {count = 3 : i64
// CHECK-NOT: irprof.profile
// CHECK: return
