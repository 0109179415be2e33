/* The tests of test_contract that live in other files. */
#ifndef ST_CONTRACT_H
#define ST_CONTRACT_H
void test_err_null_everywhere(void **unused);
#endif
