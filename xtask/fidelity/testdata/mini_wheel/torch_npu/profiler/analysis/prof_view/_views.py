class TraceViewParser:
    pass


class KernelViewParser:
    KERNEL_VIEW = "kernel_details.csv"
