// The DUMPI function table. Layout strings describe the arguments that follow a record's common
// prefix, in file order; layout.hpp defines the tokens. Written from the trace format's
// description of each record: 32-bit ints, 16-bit handles (datatype, comm, group, info, file,
// win, keyval, errhandler), 8-bit enums (op, combiner, topology, ...), 64-bit offsets,
// length-prefixed arrays and strings, and status lists that are present only when the record's
// mask says statuses were recorded.
#include "function_table.hpp"

namespace gpucomm::trace::detail {
namespace {
using C = FuncClass;

// Frequently used layouts.
constexpr const char* kSend = "i:count h:datatype i:peer i:tag h:comm";
constexpr const char* kIsend = "i:count h:datatype i:peer i:tag h:comm i:request";
constexpr const char* kRecv = "i:count h:datatype i:peer i:tag h:comm s:statuses";
constexpr const char* kTypeNew2 = "i h h";
constexpr const char* kFileRW = "h q i h s";
constexpr const char* kFileIRW = "h q i h i";
constexpr const char* kFileSeqRW = "h i h s";
constexpr const char* kFileSeqIRW = "h i h i";

constexpr FunctionRow kRows[kFunctionRows] = {
    {"MPI_Send", C::p2p_send, kSend},                                                // 0
    {"MPI_Recv", C::p2p_recv, kRecv},                                                // 1
    {"MPI_Get_count", C::admin, "s h i"},                                            // 2
    {"MPI_Bsend", C::p2p_send, kSend},                                               // 3
    {"MPI_Ssend", C::p2p_send, kSend},                                               // 4
    {"MPI_Rsend", C::p2p_send, kSend},                                               // 5
    {"MPI_Buffer_attach", C::admin, "i"},                                            // 6
    {"MPI_Buffer_detach", C::admin, "i"},                                            // 7
    {"MPI_Isend", C::p2p_send, kIsend},                                              // 8
    {"MPI_Ibsend", C::p2p_send, kIsend},                                             // 9
    {"MPI_Issend", C::p2p_send, kIsend},                                             // 10
    {"MPI_Irsend", C::p2p_send, kIsend},                                             // 11
    {"MPI_Irecv", C::p2p_recv, kIsend},                                              // 12
    {"MPI_Wait", C::completion, "i:request s:statuses"},                             // 13
    {"MPI_Test", C::completion, "i:request i:flag s:statuses"},                      // 14
    {"MPI_Request_free", C::admin, "i:request"},                                     // 15
    {"MPI_Waitany", C::completion, "i:count A:requests i:index s:statuses"},         // 16
    {"MPI_Testany", C::completion, "i:count A:requests i:index i:flag s:statuses"},  // 17
    {"MPI_Waitall", C::completion, "i:count A:requests s:statuses"},                 // 18
    {"MPI_Testall", C::completion, "i:count A:requests i:flag s:statuses"},          // 19
    {"MPI_Waitsome", C::completion, "i:count A:requests i A:indices s:statuses"},    // 20
    {"MPI_Testsome", C::completion, "i:count A:requests i A:indices s:statuses"},    // 21
    {"MPI_Iprobe", C::probe, "i:peer i:tag h:comm i:flag s:statuses"},               // 22
    {"MPI_Probe", C::probe, "i:peer i:tag h:comm s:statuses"},                       // 23
    {"MPI_Cancel", C::admin, "i:request"},                                           // 24
    {"MPI_Test_cancelled", C::admin, "s i"},                                         // 25
    {"MPI_Send_init", C::persistent_init, kIsend},                                   // 26
    {"MPI_Bsend_init", C::persistent_init, kIsend},                                  // 27
    {"MPI_Ssend_init", C::persistent_init, kIsend},                                  // 28
    {"MPI_Rsend_init", C::persistent_init, kIsend},                                  // 29
    {"MPI_Recv_init", C::persistent_init, kIsend},                                   // 30
    {"MPI_Start", C::start, "i:request"},                                            // 31
    {"MPI_Startall", C::start, "i:count A:requests"},                                // 32
    {"MPI_Sendrecv", C::p2p_sendrecv,
     "i:count h:datatype i:peer i:tag i:count2 h:datatype2 i:peer2 i:tag2 h:comm s:statuses"},  // 33
    {"MPI_Sendrecv_replace", C::p2p_sendrecv,
     "i:count h:datatype i:peer i:tag i:peer2 i:tag2 h:comm s:statuses"},  // 34
    {"MPI_Type_contiguous", C::admin, kTypeNew2},                          // 35
    {"MPI_Type_vector", C::admin, "i i i h h"},                            // 36
    {"MPI_Type_hvector", C::admin, "i i i h h"},                           // 37
    {"MPI_Type_indexed", C::admin, "i A A h h"},                           // 38
    {"MPI_Type_hindexed", C::admin, "i A A h h"},                          // 39
    {"MPI_Type_struct", C::admin, "i A T D h"},                            // 40 (T: see layout.hpp)
    {"MPI_Address", C::admin, "i"},                                        // 41
    {"MPI_Type_extent", C::admin, "h i"},                                  // 42
    {"MPI_Type_size", C::admin, "h:datatype i:value"},                     // 43
    {"MPI_Type_lb", C::admin, "h i"},                                      // 44
    {"MPI_Type_ub", C::admin, "h i"},                                      // 45
    {"MPI_Type_commit", C::admin, "h:datatype"},                           // 46
    {"MPI_Type_free", C::admin, "h:datatype"},                             // 47
    {"MPI_Get_elements", C::admin, "s h i"},                               // 48
    {"MPI_Pack", C::admin, "i h i i i h"},                                 // 49
    {"MPI_Unpack", C::admin, "i i i i h h"},                               // 50
    {"MPI_Pack_size", C::admin, "i h h i"},                                // 51
    {"MPI_Barrier", C::collective, "h:comm"},                              // 52
    {"MPI_Bcast", C::collective, "i:count h:datatype i:root h:comm"},      // 53
    {"MPI_Gather", C::collective, "i:commrank i:count h:datatype i:root h:comm ?i:count2 ?h:datatype2"},  // 54
    {"MPI_Gatherv", C::collective,
     "i:commrank i:commsize i:count h:datatype i:root h:comm ?A:counts2 ?A h:datatype2"},                  // 55
    {"MPI_Scatter", C::collective, "i:commrank i:count h:datatype i:root h:comm ?i:count2 ?h:datatype2"},  // 56
    {"MPI_Scatterv", C::collective,
     "i:commrank i:commsize h:datatype2 i:count h:datatype i:root h:comm ?A:counts2 ?A"},                 // 57
    {"MPI_Allgather", C::collective, "i:count h:datatype i:count2 h:datatype2 h:comm"},                   // 58
    {"MPI_Allgatherv", C::collective, "i:commsize i:count h:datatype A:counts2 A h:datatype2 h:comm"},    // 59
    {"MPI_Alltoall", C::collective, "i:count h:datatype i:count2 h:datatype2 h:comm"},                    // 60
    {"MPI_Alltoallv", C::collective, "i:commsize A:counts A h:datatype A:counts2 A h:datatype2 h:comm"},  // 61
    {"MPI_Reduce", C::collective, "i:count h:datatype b i:root h:comm"},                                  // 62
    {"MPI_Op_create", C::admin, "i b"},                                                                   // 63
    {"MPI_Op_free", C::admin, "b"},                                                                       // 64
    {"MPI_Allreduce", C::collective, "i:count h:datatype b h:comm"},                                      // 65
    {"MPI_Reduce_scatter", C::collective, "i:commsize A:counts h:datatype b h:comm"},                     // 66
    {"MPI_Scan", C::collective, "i:count h:datatype b h:comm"},                                           // 67
    {"MPI_Group_size", C::admin, "h i"},                                                                  // 68
    {"MPI_Group_rank", C::admin, "h i"},                                                                  // 69
    {"MPI_Group_translate_ranks", C::admin, "h i A h A"},                                                 // 70
    {"MPI_Group_compare", C::admin, "h h b"},                                                             // 71
    {"MPI_Comm_group", C::admin, "h:comm h"},                                                             // 72
    {"MPI_Group_union", C::admin, "h h h"},                                                               // 73
    {"MPI_Group_intersection", C::admin, "h h h"},                                                        // 74
    {"MPI_Group_difference", C::admin, "h h h"},                                                          // 75
    {"MPI_Group_incl", C::admin, "h i A h"},                                                              // 76
    {"MPI_Group_excl", C::admin, "h i A h"},                                                              // 77
    {"MPI_Group_range_incl", C::admin, "h i G h"},                                                        // 78
    {"MPI_Group_range_excl", C::admin, "h i G h"},                                                        // 79
    {"MPI_Group_free", C::admin, "h"},                                                                    // 80
    {"MPI_Comm_size", C::admin, "h:comm i:value"},                                                        // 81
    {"MPI_Comm_rank", C::admin, "h:comm i:value"},                                                        // 82
    {"MPI_Comm_compare", C::admin, "h h b"},                                                              // 83
    {"MPI_Comm_dup", C::admin, "h:comm h:newcomm"},                                                       // 84
    {"MPI_Comm_create", C::admin, "h:comm h h:newcomm"},                                                  // 85
    {"MPI_Comm_split", C::admin, "h:comm i i h:newcomm"},                                                 // 86
    {"MPI_Comm_free", C::admin, "h:comm"},                                                                // 87
    {"MPI_Comm_test_inter", C::admin, "h i"},                                                             // 88
    {"MPI_Comm_remote_size", C::admin, "h i"},                                                            // 89
    {"MPI_Comm_remote_group", C::admin, "h h"},                                                           // 90
    {"MPI_Intercomm_create", C::admin, "h i h i i h:newcomm"},                                            // 91
    {"MPI_Intercomm_merge", C::admin, "h i h:newcomm"},                                                   // 92
    {"MPI_Keyval_create", C::admin, "h"},                                                                 // 93
    {"MPI_Keyval_free", C::admin, "h"},                                                                   // 94
    {"MPI_Attr_put", C::admin, "h i"},                                                                    // 95
    {"MPI_Attr_get", C::admin, "h i i"},                                                                  // 96
    {"MPI_Attr_delete", C::admin, "h i"},                                                                 // 97
    {"MPI_Topo_test", C::admin, "h b"},                                                                   // 98
    {"MPI_Cart_create", C::admin, "h:comm i A A i h:newcomm"},                                            // 99
    {"MPI_Dims_create", C::admin, "i i A A"},                                                             // 100
    {"MPI_Graph_create", C::admin, "i h:comm i A A i h:newcomm"},                                         // 101
    {"MPI_Graphdims_get", C::admin, "h i i"},                                                             // 102
    {"MPI_Graph_get", C::admin, "i i h i i A A"},                                                         // 103
    {"MPI_Cartdim_get", C::admin, "h i"},                                                                 // 104
    {"MPI_Cart_get", C::admin, "i h i A A K"},                                           // 105 (K: see layout.hpp)
    {"MPI_Cart_rank", C::admin, "i h A i"},                                              // 106
    {"MPI_Cart_coords", C::admin, "i h i i A"},                                          // 107
    {"MPI_Graph_neighbors_count", C::admin, "h i i"},                                    // 108
    {"MPI_Graph_neighbors", C::admin, "i h i i A"},                                      // 109
    {"MPI_Cart_shift", C::admin, "h i i i i"},                                           // 110
    {"MPI_Cart_sub", C::admin, "i h:comm A h:newcomm"},                                  // 111
    {"MPI_Cart_map", C::admin, "h i A A i"},                                             // 112
    {"MPI_Graph_map", C::admin, "i h i A A i"},                                          // 113
    {"MPI_Get_processor_name", C::admin, "c i"},                                         // 114
    {"MPI_Get_version", C::admin, "i i"},                                                // 115
    {"MPI_Errhandler_create", C::admin, "h"},                                            // 116
    {"MPI_Errhandler_set", C::admin, "h h"},                                             // 117
    {"MPI_Errhandler_get", C::admin, "h h"},                                             // 118
    {"MPI_Errhandler_free", C::admin, "h"},                                              // 119
    {"MPI_Error_string", C::admin, "i c i"},                                             // 120
    {"MPI_Error_class", C::admin, "i i"},                                                // 121
    {"MPI_Wtime", C::admin, ""},                                                         // 122
    {"MPI_Wtick", C::admin, ""},                                                         // 123
    {"MPI_Init", C::admin, "V"},                                                         // 124
    {"MPI_Finalize", C::admin, ""},                                                      // 125
    {"MPI_Initialized", C::admin, "i"},                                                  // 126
    {"MPI_Abort", C::admin, "h i"},                                                      // 127
    {"MPI_Pcontrol", C::admin, nullptr},                                                 // 128 (never recorded)
    {"MPI_Close_port", C::admin, "c"},                                                   // 129
    {"MPI_Comm_accept", C::admin, "c h i h h:newcomm"},                                  // 130
    {"MPI_Comm_connect", C::admin, "c h i h h:newcomm"},                                 // 131
    {"MPI_Comm_disconnect", C::admin, "h"},                                              // 132
    {"MPI_Comm_get_parent", C::admin, "h"},                                              // 133
    {"MPI_Comm_join", C::admin, "i h"},                                                  // 134
    {"MPI_Comm_spawn", C::admin, "i:commrank i:root h h ?c ?C ?i ?h ?A"},                // 135
    {"MPI_Comm_spawn_multiple", C::admin, "i i:commrank i:root h h ?i ?C ?E ?A ?D ?A"},  // 136
    {"MPI_Lookup_name", C::admin, "c h c"},                                              // 137
    {"MPI_Open_port", C::admin, "h c"},                                                  // 138
    {"MPI_Publish_name", C::admin, "c h c"},                                             // 139
    {"MPI_Unpublish_name", C::admin, "c h c"},                                           // 140
    {"MPI_Accumulate", C::rma, "i h i i i h b h"},                                       // 141
    {"MPI_Get", C::rma, "i h i i i h h"},                                                // 142
    {"MPI_Put", C::rma, "i h i i i h h"},                                                // 143
    {"MPI_Win_complete", C::rma, "h"},                                                   // 144
    {"MPI_Win_create", C::admin, "i i h h h"},                                           // 145
    {"MPI_Win_fence", C::rma, "b h"},                                                    // 146
    {"MPI_Win_free", C::admin, "h"},                                                     // 147
    {"MPI_Win_get_group", C::admin, "h h"},                                              // 148
    {"MPI_Win_lock", C::rma, "b i b h"},                                                 // 149
    {"MPI_Win_post", C::rma, "h b h"},                                                   // 150
    {"MPI_Win_start", C::rma, "h b h"},                                                  // 151
    {"MPI_Win_test", C::rma, "h i"},                                                     // 152
    {"MPI_Win_unlock", C::rma, "i h"},                                                   // 153
    {"MPI_Win_wait", C::rma, "h"},                                                       // 154
    {"MPI_Alltoallw", C::collective, "i:commsize A:counts A D A:counts2 A D h:comm"},    // 155
    {"MPI_Exscan", C::collective, "i:count h:datatype b h:comm"},                        // 156
    {"MPI_Add_error_class", C::admin, "i"},                                              // 157
    {"MPI_Add_error_code", C::admin, "i i"},                                             // 158
    {"MPI_Add_error_string", C::admin, "i c"},                                           // 159
    {"MPI_Comm_call_errhandler", C::admin, "h i"},                                       // 160
    {"MPI_Comm_create_keyval", C::admin, "h"},                                           // 161
    {"MPI_Comm_delete_attr", C::admin, "h h"},                                           // 162
    {"MPI_Comm_free_keyval", C::admin, "h"},                                             // 163
    {"MPI_Comm_get_attr", C::admin, "h h i"},                                            // 164
    {"MPI_Comm_get_name", C::admin, "h c i"},                                            // 165
    {"MPI_Comm_set_attr", C::admin, "h h"},                                              // 166
    {"MPI_Comm_set_name", C::admin, "h c"},                                              // 167
    {"MPI_File_call_errhandler", C::admin, "h i"},                                       // 168
    {"MPI_Grequest_complete", C::admin, "i"},                                            // 169
    {"MPI_Grequest_start", C::admin, "i"},                                               // 170
    {"MPI_Init_thread", C::admin, "V b b"},                                              // 171
    {"MPI_Is_thread_main", C::admin, "i"},                                               // 172
    {"MPI_Query_thread", C::admin, "b"},                                                 // 173
    {"MPI_Status_set_cancelled", C::admin, "s i"},                                       // 174
    {"MPI_Status_set_elements", C::admin, "s h i"},                                      // 175
    {"MPI_Type_create_keyval", C::admin, "h"},                                           // 176
    {"MPI_Type_delete_attr", C::admin, "h h"},                                           // 177
    {"MPI_Type_dup", C::admin, "h h"},                                                   // 178
    {"MPI_Type_free_keyval", C::admin, "h"},                                             // 179
    {"MPI_Type_get_attr", C::admin, "h h i"},                                            // 180
    {"MPI_Type_get_contents", C::admin, "i i i h i i i A A D"},                          // 181
    {"MPI_Type_get_envelope", C::admin, "h i i i b"},                                    // 182
    {"MPI_Type_get_name", C::admin, "h c i"},                                            // 183
    {"MPI_Type_set_attr", C::admin, "h h"},                                              // 184
    {"MPI_Type_set_name", C::admin, "h c"},                                              // 185
    {"MPI_Type_match_size", C::admin, "b i h"},                                          // 186
    {"MPI_Win_call_errhandler", C::admin, "h i"},                                        // 187
    {"MPI_Win_create_keyval", C::admin, "h"},                                            // 188
    {"MPI_Win_delete_attr", C::admin, "h h"},                                            // 189
    {"MPI_Win_free_keyval", C::admin, "h"},                                              // 190
    {"MPI_Win_get_attr", C::admin, "h h i"},                                             // 191
    {"MPI_Win_get_name", C::admin, "h c i"},                                             // 192
    {"MPI_Win_set_attr", C::admin, "h h"},                                               // 193
    {"MPI_Win_set_name", C::admin, "h c"},                                               // 194
    {"MPI_Alloc_mem", C::admin, "i h"},                                                  // 195
    {"MPI_Comm_create_errhandler", C::admin, "h"},                                       // 196
    {"MPI_Comm_get_errhandler", C::admin, "h h"},                                        // 197
    {"MPI_Comm_set_errhandler", C::admin, "h h"},                                        // 198
    {"MPI_File_create_errhandler", C::admin, "h"},                                       // 199
    {"MPI_File_get_errhandler", C::admin, "h h"},                                        // 200
    {"MPI_File_set_errhandler", C::admin, "h h"},                                        // 201
    {"MPI_Finalized", C::admin, "i"},                                                    // 202
    {"MPI_Free_mem", C::admin, ""},                                                      // 203
    {"MPI_Get_address", C::admin, "i"},                                                  // 204
    {"MPI_Info_create", C::admin, "h"},                                                  // 205
    {"MPI_Info_delete", C::admin, "h c"},                                                // 206
    {"MPI_Info_dup", C::admin, "h h"},                                                   // 207
    {"MPI_Info_free", C::admin, "h"},                                                    // 208
    {"MPI_Info_get", C::admin, "h c i c i"},                                             // 209
    {"MPI_Info_get_nkeys", C::admin, "h i"},                                             // 210
    {"MPI_Info_get_nthkey", C::admin, "h i c"},                                          // 211
    {"MPI_Info_get_valuelen", C::admin, "h c i i"},                                      // 212
    {"MPI_Info_set", C::admin, "h c c"},                                                 // 213
    {"MPI_Pack_external", C::admin, "c i h i i i"},                                      // 214
    {"MPI_Pack_external_size", C::admin, "c i h i"},                                     // 215
    {"MPI_Request_get_status", C::completion, "i:request i:flag s:statuses"},            // 216
    {"MPI_Type_create_darray", C::admin, "i i i A B A A b h h"},                         // 217
    {"MPI_Type_create_hindexed", C::admin, "i A A h h"},                                 // 218
    {"MPI_Type_create_hvector", C::admin, "i i i h h"},                                  // 219
    {"MPI_Type_create_indexed_block", C::admin, "i i A h h"},                            // 220
    {"MPI_Type_create_resized", C::admin, "h i i h"},                                    // 221
    {"MPI_Type_create_struct", C::admin, "i A A D h"},                                   // 222
    {"MPI_Type_create_subarray", C::admin, "i A A A b h h"},                             // 223
    {"MPI_Type_get_extent", C::admin, "h i i"},                                          // 224
    {"MPI_Type_get_true_extent", C::admin, "h i i"},                                     // 225
    {"MPI_Unpack_external", C::admin, "c i i i i h"},                                    // 226
    {"MPI_Win_create_errhandler", C::admin, "h"},                                        // 227
    {"MPI_Win_get_errhandler", C::admin, "h h"},                                         // 228
    {"MPI_Win_set_errhandler", C::admin, "h h"},                                         // 229
    {"MPI_File_open", C::io, "h c b h h"},                                               // 230
    {"MPI_File_close", C::io, "h"},                                                      // 231
    {"MPI_File_delete", C::io, "c h"},                                                   // 232
    {"MPI_File_set_size", C::io, "h q"},                                                 // 233
    {"MPI_File_preallocate", C::io, "h q"},                                              // 234
    {"MPI_File_get_size", C::io, "h q"},                                                 // 235
    {"MPI_File_get_group", C::io, "h h"},                                                // 236
    {"MPI_File_get_amode", C::io, "h b"},                                                // 237
    {"MPI_File_set_info", C::io, "h h"},                                                 // 238
    {"MPI_File_get_info", C::io, "h h"},                                                 // 239
    {"MPI_File_set_view", C::io, "h q h h c h"},                                         // 240
    {"MPI_File_get_view", C::io, "h q h h c"},                                           // 241
    {"MPI_File_read_at", C::io, kFileRW},                                                // 242
    {"MPI_File_read_at_all", C::io, kFileRW},                                            // 243
    {"MPI_File_write_at", C::io, kFileRW},                                               // 244
    {"MPI_File_write_at_all", C::io, kFileRW},                                           // 245
    {"MPI_File_iread_at", C::io, kFileIRW},                                              // 246
    {"MPI_File_iwrite_at", C::io, kFileIRW},                                             // 247
    {"MPI_File_read", C::io, kFileSeqRW},                                                // 248
    {"MPI_File_read_all", C::io, kFileSeqRW},                                            // 249
    {"MPI_File_write", C::io, kFileSeqRW},                                               // 250
    {"MPI_File_write_all", C::io, kFileSeqRW},                                           // 251
    {"MPI_File_iread", C::io, kFileSeqIRW},                                              // 252
    {"MPI_File_iwrite", C::io, kFileSeqIRW},                                             // 253
    {"MPI_File_seek", C::io, "h q b"},                                                   // 254
    {"MPI_File_get_position", C::io, "h q"},                                             // 255
    {"MPI_File_get_byte_offset", C::io, "h q q"},                                        // 256
    {"MPI_File_read_shared", C::io, kFileSeqRW},                                         // 257
    {"MPI_File_write_shared", C::io, kFileSeqRW},                                        // 258
    {"MPI_File_iread_shared", C::io, kFileSeqIRW},                                       // 259
    {"MPI_File_iwrite_shared", C::io, kFileSeqIRW},                                      // 260
    {"MPI_File_read_ordered", C::io, kFileSeqRW},                                        // 261
    {"MPI_File_write_ordered", C::io, kFileSeqRW},                                       // 262
    {"MPI_File_seek_shared", C::io, "h q b"},                                            // 263
    {"MPI_File_get_position_shared", C::io, "h q"},                                      // 264
    {"MPI_File_read_at_all_begin", C::io, "h q i h"},                                    // 265
    {"MPI_File_read_at_all_end", C::io, "h s"},                                          // 266
    {"MPI_File_write_at_all_begin", C::io, "h q i h"},                                   // 267
    {"MPI_File_write_at_all_end", C::io, "h s"},                                         // 268
    {"MPI_File_read_all_begin", C::io, "h i h"},                                         // 269
    {"MPI_File_read_all_end", C::io, "h s"},                                             // 270
    {"MPI_File_write_all_begin", C::io, "h i h"},                                        // 271
    {"MPI_File_write_all_end", C::io, "h s"},                                            // 272
    {"MPI_File_read_ordered_begin", C::io, "h i h"},                                     // 273
    {"MPI_File_read_ordered_end", C::io, "h s"},                                         // 274
    {"MPI_File_write_ordered_begin", C::io, "h i h"},                                    // 275
    {"MPI_File_write_ordered_end", C::io, "h s"},                                        // 276
    {"MPI_File_get_type_extent", C::io, "h h i"},                                        // 277
    {"MPI_Register_datarep", C::io, "c"},                                                // 278
    {"MPI_File_set_atomicity", C::io, "h i"},                                            // 279
    {"MPI_File_get_atomicity", C::io, "h i"},                                            // 280
    {"MPI_File_sync", C::io, "h"},                                                       // 281
    {"MPIO_Test", C::io, "i i s"},                                                       // 282
    {"MPIO_Wait", C::io, "i s"},                                                         // 283
    {"MPIO_Testall", C::io, "i A i s"},                                                  // 284
    {"MPIO_Waitall", C::io, "i A s"},                                                    // 285
    {"MPIO_Testany", C::io, "i A i i s"},                                                // 286
    {"MPIO_Waitany", C::io, "i A i s"},                                                  // 287
    {"MPIO_Waitsome", C::io, "i A i A s"},                                               // 288
    {"MPIO_Testsome", C::io, "i A i A s"},                                               // 289
    {"DUMPI_ALL_FUNCTIONS", C::marker, nullptr},                                         // 290
    {"DUMPI_Function_enter", C::marker, "q"},                                            // 291
    {"DUMPI_Function_exit", C::marker, "q"},                                             // 292
};
}  // namespace

const FunctionRow* function_rows() noexcept {
  return kRows;
}

}  // namespace gpucomm::trace::detail
