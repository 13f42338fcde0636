# local-id identity nranks rank-in-communicator
comm 0 6ff6b42007747ed5 1 0
