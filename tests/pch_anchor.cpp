// The translation unit that builds the tests' precompiled header
// (tests/CMakeLists.txt, dtplan_test_pch): nothing of its own.
