"""dpauc_tf"""
